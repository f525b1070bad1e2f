#!/usr/bin/env python3
"""Lists every function definition in src/ and tools/ longer than 80 lines; exits 1 if any is not allowed.

Usage: scripts/check_function_length.py [--max-lines N] [--list]

A long function is split along its phases into named helpers; the few that must stay one function
(a GPU kernel whose phases share registers and barriers) are named, each with its reason, in
scripts/function_length_allowlist.txt as `path:function  reason`. An allowlist entry that no longer
names a function over the limit is reported too, so the list only shrinks. `--list` prints every
function over the limit, allowed or not, and exits 0.

How it reads code: it relies on the layout the tree is written in (Google style, checked by
.clang-format) instead of parsing C++. Comments and string literals (raw ones included) are blanked
first. Namespaces and extern "C" blocks are not indented, so a definition at namespace scope
starts at column 0 (with its `template <...>` line, if any) and its body ends at the first `}` in
column 0; a signature is the text from that first line to the line ending in `{`, and it is a
function if it has a parameter list and is not a class, struct, enum, union or an initialiser
(`= {`). Out-of-class member
definitions (`Foo::Bar(...) {`) are therefore found like free functions. It does not look inside
class bodies: a member function defined in its class is indented and is not measured.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWLIST = "scripts/function_length_allowlist.txt"
SUFFIXES = (".cc", ".h", ".cu", ".cuh")

# Comments and literals, blanked so that their braces, parentheses and column-0 lines don't count.
_LITERALS = re.compile(
    r'R"(?P<delim>[^(\s"\\]{0,16})\(.*?\)(?P=delim)"'  # raw string
    r"|/\*.*?\*/"  # block comment
    r"|//[^\n]*"  # line comment
    r'|"(?:\\.|[^"\\\n])*"'  # string
    r"|'(?:\\.|[^'\\\n])*'",  # character
    re.S,
)
# Words whose parenthesised argument comes before a function's name.
_PREFIX_CALLS = {"__launch_bounds__", "decltype", "alignas", "__attribute__", "__declspec"}
_NOT_FUNCTION = re.compile(r"^(?:template\s*<.*?>\s*)?(?:typedef\s+)?(?:class|struct|enum|union|namespace|extern)\b")
_OPERATOR = re.compile(r"operator\b\s*(\(\)|[^\s(]*)")
_NAME_BEFORE = re.compile(r"((?:~?\w+(?:<[^()]*?>)?::)*(?:operator\s*(?:\(\)|[^\s(]+)|~?\w+))\s*$")


def _blank(match):
    return "\n" * match.group(0).count("\n")


def _function_name(signature):
    """The (qualified) name before the parameter list of `signature`, or None if it has none."""
    depth = 0
    i = 0
    while i < len(signature):
        c = signature[i]
        operator = _OPERATOR.match(signature, i) if c == "o" else None
        if operator and (i == 0 or not (signature[i - 1].isalnum() or signature[i - 1] == "_")):
            i = operator.end()  # `operator<<`, `operator()`: symbols of the name, not brackets
            continue
        if c == "<":
            depth += 1
        elif c == ">" and depth > 0:
            depth -= 1
        elif c == "=" and depth == 0:
            return None  # an initialiser, not a signature
        elif c == "(" and depth == 0:
            match = _NAME_BEFORE.search(signature[:i])
            if match is None:
                return None
            name = match.group(1)
            if name.split("::")[-1] not in _PREFIX_CALLS:
                return re.sub(r"\s+", "", name)
            # Skip the attribute's balanced argument list and keep looking.
            nesting = 0
            while i < len(signature):
                nesting += {"(": 1, ")": -1}.get(signature[i], 0)
                if nesting == 0:
                    break
                i += 1
        i += 1
    return None


def long_functions(path, text, max_lines):
    """Yields (name, first line, length in lines) for each definition of `text` longer than max_lines."""
    lines = _LITERALS.sub(_blank, text).split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0].isspace() or line[0] in "#}":
            i += 1
            continue
        # A column-0 statement: gather it up to the line that opens a body or ends it.
        # A line at column 0 after one that is not a `template <...>` head starts a new statement (an
        # unterminated macro invocation before a definition).
        start = i
        while i < len(lines) and not lines[i].rstrip().endswith(("{", ";", "}")):
            i += 1
            if i < len(lines) and lines[i][:1].strip() not in ("", "#") and not lines[i - 1].startswith("template"):
                start = i
        if i == len(lines):
            break
        signature = " ".join(l.strip() for l in lines[start : i + 1])
        if not signature.endswith("{") or re.match(r"(namespace|extern)\b[^(]*\{$", signature):
            i += 1  # a declaration, a one-line definition, or a scope whose contents are at column 0
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        if end - start + 1 > max_lines and not _NOT_FUNCTION.match(signature):
            name = _function_name(signature)
            if name is not None:
                yield name, start + 1, end - start + 1
        i = end + 1


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "-z", "src", "tools"], cwd=ROOT, check=True, capture_output=True).stdout
    return sorted(p for p in out.decode().split("\0") if p.endswith(SUFFIXES))


def read_allowlist():
    """{"path:function": line number} from the allowlist; every entry must give a reason."""
    entries = {}
    with open(os.path.join(ROOT, ALLOWLIST)) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) < 2 or ":" not in parts[0]:
                sys.exit(f"{ALLOWLIST}:{number}: expected `path:function  reason`")
            entries[parts[0]] = number
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-lines", type=int, default=80)
    parser.add_argument("--list", action="store_true", help="print every long function and exit 0")
    args = parser.parse_args()
    allowed = read_allowlist()
    offenders = []
    seen = set()
    for path in tracked_sources():
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name, line, length in long_functions(path, text, args.max_lines):
            key = f"{path}:{name}"
            seen.add(key)
            if args.list or key not in allowed:
                offenders.append(f"{path}:{line}: {name} is {length} lines{' (allowed)' if key in allowed else ''}")
    if args.list:
        print("\n".join(offenders))
        return 0
    stale = [f"{ALLOWLIST}:{n}: {key} is not a function over {args.max_lines} lines any more: remove it"
             for key, n in allowed.items() if key not in seen]
    for message in offenders:
        print(f"{message} (over {args.max_lines}: split it along its phases into named helpers)")
    for message in stale:
        print(message)
    if offenders or stale:
        return 1
    print(f"no function over {args.max_lines} lines in src/ and tools/ beyond the {len(allowed)} allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
