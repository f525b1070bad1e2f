# Sources of the IR (data structures, parser, printer, verifier, types, builder), relative to this
# folder; shared by src/planner/CMakeLists.txt and the clang fuzz build in fuzz/.
set(VDEV_IR_SOURCES ir.cc lexer.cc parser.cc printer.cc op_registry.cc verifier.cc ir_builder.cc builtin_ops.cc)
