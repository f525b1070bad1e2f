#!/usr/bin/env python3
"""Checks python/vdev/_vdev.pyi against the built extension vdev._vdev: the same top-level names,
the same public members per class (methods, properties, static methods), and the same parameter
names and keyword-only markers per function (read from the signatures pybind11 writes into each
docstring). Exit status 0 when they match, 1 with one line per difference otherwise.

    PYTHONPATH=build/python python3 scripts/check_python_stubs.py python/vdev/_vdev.pyi
"""

import ast
import importlib
import re
import sys
from typing import Dict, List, Optional

# Members every pybind11 class has that the stubs need not repeat.
IGNORED = {"__init__", "__repr__", "__str__", "__eq__", "__hash__", "__getstate__", "__setstate__",
           "__doc__", "__module__", "__dict__", "__weakref__", "__ne__"}


def stub_params(fn: ast.FunctionDef) -> List[str]:
    """Parameter names, with '*' for *args (pybind11 always calls it `args`, stubs may name it) or
    where keyword-only ones start, '**' for **kwargs; self dropped."""
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg or args.kwonlyargs:
        names.append("*")
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append("**")
    return [n for n in names if n != "self"]


def runtime_params(obj: object, name: str) -> Optional[List[str]]:
    """Parameter names from pybind11's `name(a: T, *, b: U = d) -> R` docstring line."""
    doc = getattr(obj, "__doc__", None) or ""
    first = doc.splitlines()[0] if doc else ""
    match = re.match(rf"{re.escape(name)}\((.*)\) ->", first)
    if not match:
        return None
    names, depth, current = [], 0, ""
    for ch in match.group(1) + ",":
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            if current.strip():
                names.append(current.split(":")[0].split("=")[0].strip())
            current = ""
        else:
            current += ch
    normalized = {"*args": "*", "**kwargs": "**"}
    return [normalized.get(n, n) for n in names if n != "self"]


def check(stub_path: str, module_name: str) -> List[str]:
    tree = ast.parse(open(stub_path).read())
    module = importlib.import_module(module_name)
    problems = []
    stub_top: Dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stub_top[node.name] = node
    runtime_top = {n for n in dir(module) if not n.startswith("__")}
    for missing in sorted(runtime_top - stub_top.keys()):
        problems.append(f"{module_name}.{missing}: in the module, not in the stubs")
    for extra in sorted(stub_top.keys() - runtime_top):
        problems.append(f"{module_name}.{extra}: in the stubs, not in the module")
    for name, node in sorted(stub_top.items()):
        if name not in runtime_top:
            continue
        obj = getattr(module, name)
        if isinstance(node, ast.FunctionDef):
            problems += compare_params(f"{module_name}.{name}", node, obj, name)
            continue
        members = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        runtime_members = {m for m in vars(obj) if m not in IGNORED and not m.startswith("_pybind11")}
        for missing in sorted(runtime_members - members.keys()):
            problems.append(f"{module_name}.{name}.{missing}: in the module, not in the stubs")
        for extra in sorted(members.keys() - runtime_members - IGNORED):
            problems.append(f"{module_name}.{name}.{extra}: in the stubs, not in the module")
        for member, fn in members.items():
            if member not in vars(obj):
                continue
            raw = vars(obj)[member]
            is_property = isinstance(raw, property)
            decorated_property = any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)
            if is_property != decorated_property:
                problems.append(f"{module_name}.{name}.{member}: property in one, method in the other")
                continue
            if not is_property:
                problems += compare_params(f"{module_name}.{name}.{member}", fn, getattr(obj, member), member)
    return problems


def compare_params(where: str, fn: ast.FunctionDef, obj: object, name: str) -> List[str]:
    runtime = runtime_params(obj, name)
    if runtime is None:
        return [f"{where}: no pybind11 signature to compare with"]
    stub = stub_params(fn)
    if stub != runtime:
        return [f"{where}: parameters {stub} in the stubs, {runtime} in the module"]
    return []


def main() -> int:
    stub = sys.argv[1] if len(sys.argv) > 1 else "python/vdev/_vdev.pyi"
    problems = check(stub, "vdev._vdev")
    for p in problems:
        print(p)
    if not problems:
        print(f"{stub}: matches vdev._vdev")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
