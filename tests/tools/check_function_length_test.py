"""Tests of scripts/check_function_length.py: which definitions it finds and how long it measures them."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import check_function_length as checker  # noqa: E402


def lengths(text):
    """{name: length} of every definition of `text` (a limit of 0 reports them all)."""
    return {name: length for name, _, length in checker.long_functions("x.cc", text, 0)}


def body(lines):
    return "".join(f"  x += {i};\n" for i in range(lines))


class FunctionLengthTest(unittest.TestCase):
    def test_counts_from_signature_to_closing_brace(self):
        self.assertEqual(lengths("int F() {\n" + body(3) + "}\n"), {"F": 5})

    def test_multiline_signature_and_template_head_count(self):
        text = "template <typename T>\nabsl::Status Foo::Bar(int a,\n                      int b) {\n" + body(2) + "}\n"
        self.assertEqual(lengths(text), {"Foo::Bar": 6})

    def test_only_the_long_ones_are_reported(self):
        text = "void Short() {\n" + body(2) + "}\n\nvoid Long() {\n" + body(90) + "}\n"
        found = list(checker.long_functions("x.cc", text, 80))
        self.assertEqual([(name, line, length) for name, line, length in found], [("Long", 6, 92)])

    def test_operators_and_kernels_are_named(self):
        text = (
            "std::ostream& operator<<(std::ostream& os, const A& a) {\n  return os;\n}\n"
            "bool operator<(const A& a, const A& b) {\n  return false;\n}\n"
            "__global__ void __launch_bounds__(kThreads, Min(kThreads)) Kernel(const Args a) {\n" + body(1) + "}\n"
        )
        self.assertEqual(lengths(text), {"operator<<": 3, "operator<": 3, "Kernel": 3})

    def test_braces_in_strings_and_comments_do_not_end_a_function(self):
        text = 'void F() {\n  const char* s = R"(\n}\n)";\n  // }\n  /*\n}\n*/\n  char c = \'}\';\n}\n'
        self.assertEqual(lengths(text), {"F": 10})

    def test_namespaces_and_extern_c_contents_are_read_classes_are_skipped(self):
        text = (
            "namespace a {\nnamespace {\n\nint F() {\n  return 1;\n}\n\n}  // namespace\n}  // namespace a\n"
            'extern "C" {\nint G() {\n  return 2;\n}\n}\n'
            "class C {\n public:\n  int H() {\n    return 3;\n  }\n};\n"
            "const int kTable[] = {\n  1,\n};\n"
        )
        self.assertEqual(lengths(text), {"F": 3, "G": 3})

    def test_a_macro_line_before_a_definition_is_not_part_of_it(self):
        text = "FORWARD(f, (int a), (a))\nFORWARD(g, (int b),\n        (b))\n\nint H() {\n  return 0;\n}\n"
        self.assertEqual(lengths(text), {"H": 3})


if __name__ == "__main__":
    unittest.main()
