#!/usr/bin/env python3
"""Two layout rules, checked from the source text (no build, no dependencies):

1. No import cycle between the modules of one crate. Each crate target (`src/lib.rs`,
   `src/main.rs`, `src/bin/*.rs`) gives a module tree from its `mod` declarations (files and inline
   `mod x { }` blocks; `#[cfg(test)]` items left out). An edge runs from a module to every module
   its `use crate::/super::/self::` paths (grouped, nested, `pub use`, renamed) and inline paths
   (`crate::a::b::f()`, or `b::f()` after `use crate::a::b`) name. A module's submodules are
   inside it: an edge from `a::x` to `b::y` is an edge from `a` to `b`, and one between a module
   and its own ancestor or descendant is no edge. A cycle is a strongly connected set of sibling
   modules, at any depth.
2. No source file over 500 lines outside tests. Counted: `.rs`, `.sh` and `.py` files outside
   `target/`, hidden folders and the ignored output folders (not `.js`: the k6 script goes to
   the load machines as one file). Tests are files under a `tests/` folder, `tests.rs` and
   `*_tests.rs`, and a Rust file's trailing `#[cfg(test)] mod ... { }` block (its lines from that
   attribute on are not counted).

Usage: python3 scripts/check-layout.py [--root DIR]   (part of scripts/test.sh; exits 1 and
lists every cycle, with the `use` lines that make it, and every file over the limit)
"""

import argparse
import os
import re
import sys

MAX_LINES = 500
COUNTED_KINDS = (".rs", ".sh", ".py")
SKIPPED_FOLDERS = {"target", "results", "node_modules", "__pycache__"}

CFG_TEST = re.compile(r"#\[cfg\(test\)\]")
INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{")
FILE_MOD = re.compile(r"\bmod\s+(\w+)\s*;")
USE = re.compile(r"\buse\s+([^;]+);")
INLINE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:\s*::\s*\w+)+)")
LITERAL_OR_COMMENT = re.compile(r"""//[^\n]*|/\*|(?<!\w)b?r#*"|b?"|'(?:\\.[^']{0,8}|[^'\\])'""")
BLOCK_COMMENT_EDGE = re.compile(r"/\*|\*/")
STRING_REST = re.compile(r'(?:[^"\\]|\\.)*"?', re.S)
TRAILING_TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+\w+\s*\{")


# ---- reading Rust source as text ---------------------------------------------------------------


def strip_comments_and_strings(text):
    """The text with comments and string/char literals blanked (newlines kept, so offsets and
    line numbers stay those of the file)."""
    out, i, n = [], 0, len(text)
    while (found := LITERAL_OR_COMMENT.search(text, i)) is not None:
        start, token = found.start(), found.group()
        if token == "/*":
            depth, end = 1, found.end()
            while end < n and depth:
                step = BLOCK_COMMENT_EDGE.search(text, end)
                if step is None:
                    end = n
                    break
                depth += 1 if step.group() == "/*" else -1
                end = step.end()
        elif token.endswith('"') and "r" in token:
            close = text.find('"' + token[token.index("r") + 1 : -1], found.end())
            end = n if close < 0 else close + len(token) - token.index("r") - 1
        elif token.endswith('"'):
            end = STRING_REST.match(text, found.end()).end()
        else:
            end = found.end()
        out.append(text[i:start])
        out.append(re.sub(r"[^\n]", " ", text[start:end]))
        i = end
    out.append(text[i:])
    return "".join(out)


def matching_braces(code):
    """Offset of every `{` -> offset of its `}`."""
    pairs, stack = {}, []
    for brace in re.finditer(r"[{}]", code):
        if brace.group() == "{":
            stack.append(brace.start())
        elif stack:
            pairs[stack.pop()] = brace.start()
    return pairs


def without_test_items(code):
    """The code with every `#[cfg(test)]` item blanked: up to its `;`, or its `{ }` block."""
    pairs = matching_braces(code)
    out = list(code)
    for attribute in CFG_TEST.finditer(code):
        semicolon, brace = code.find(";", attribute.end()), code.find("{", attribute.end())
        if brace >= 0 and (semicolon < 0 or brace < semicolon):
            end = pairs.get(brace, len(code) - 1) + 1
        else:
            end = semicolon + 1 if semicolon >= 0 else len(code)
        for k in range(attribute.start(), end):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def use_tree_paths(tree):
    """`a::{b, c::{d as e, self}, f::*}` -> (['a','b'], 'b'), (['a','c','d'], 'e'), (['a','c'], 'c'),
    (['a','f'], None): every leaf path and the local name it binds (None for a glob)."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", re.sub(r"\s+", " ", tree.strip()))
    results = []

    def walk(prefix, text):
        parts, depth, start = [], 0, 0
        for k, c in enumerate(text):
            depth += c == "{"
            depth -= c == "}"
            if c == "," and depth == 0:
                parts.append(text[start:k])
                start = k + 1
        parts.append(text[start:])
        for part in filter(None, parts):
            if "{" in part:
                head = part[: part.index("{")].rstrip(":")
                inner = part[part.index("{") + 1 : part.rindex("}")]
                walk(prefix + [s for s in head.split("::") if s], inner)
                continue
            name, _, alias = part.partition(" as ")
            segments = prefix + [s for s in name.strip().split("::") if s]
            if segments[-1:] == ["self"]:
                segments = segments[:-1]
            if segments[-1:] == ["*"]:
                results.append((segments[:-1], None))
            elif segments:
                results.append((segments, alias.strip() or segments[-1]))

    walk([], tree.lstrip(":"))
    return results


# ---- module graph ------------------------------------------------------------------------------


class CrateTarget:
    """One crate target's module tree and the references between its modules."""

    def __init__(self, root_file):
        self.root_file = root_file
        self.modules = {()}
        self.references = []  # (module, segments, file, line)
        self.bindings = {}  # module -> {local name: segments as written}
        self.load(root_file, (), os.path.dirname(root_file))

    def load(self, path, module, child_dir):
        with open(path, encoding="utf-8") as source:
            code = without_test_items(strip_comments_and_strings(source.read()))
        pairs = matching_braces(code)
        inline = [
            (m.end() - 1, pairs.get(m.end() - 1, len(code)), m.group(1))
            for m in INLINE_MOD.finditer(code)
        ]

        def enclosing(offset):
            return tuple(name for start, end, name in inline if start < offset < end)

        def line_of(offset):
            return code.count("\n", 0, offset) + 1

        for start, _, name in inline:
            self.modules.add(module + enclosing(start) + (name,))
        for declaration in FILE_MOD.finditer(code):
            inner = enclosing(declaration.start())
            name = declaration.group(1)
            folder = os.path.join(child_dir, *inner)
            for candidate in (os.path.join(folder, name + ".rs"), os.path.join(folder, name, "mod.rs")):
                if os.path.exists(candidate):
                    self.modules.add(module + inner + (name,))
                    self.load(candidate, module + inner + (name,), os.path.join(folder, name))
                    break
        uses = list(USE.finditer(code))
        for use in uses:
            here = module + enclosing(use.start())
            for segments, name in use_tree_paths(use.group(1)):
                self.references.append((here, segments, path, line_of(use.start())))
                if name and name != "_":
                    self.bindings.setdefault(here, {})[name] = segments
        for found in INLINE_PATH.finditer(code):
            segments = [s.strip() for s in found.group(1).split("::")]
            here = module + enclosing(found.start())
            self.references.append((here, segments, path, line_of(found.start())))
        # `name::x` where `name` was bound by a `use` of this module (or is a child module).
        for found in re.finditer(r"(?<![\w:])(\w+)\s*::\s*(\w+)", code):
            here = module + enclosing(found.start())
            if found.group(1) in self.bindings.get(here, {}):
                segments = [found.group(1), found.group(2)]
                self.references.append((here, segments, path, line_of(found.start())))

    def absolute(self, module, segments, seen=()):
        """The crate-absolute path `segments` names from inside `module`, or None (another crate,
        std, or a name this reading cannot follow)."""
        first, rest = segments[0], list(segments[1:])
        if first in ("crate", "$crate"):
            return rest
        if first == "self":
            return list(module) + rest
        if first == "super":
            up = list(module)
            while segments and segments[0] == "super":
                if not up:
                    return None
                up.pop()
                segments = segments[1:]
            return up + list(segments)
        if module + (first,) in self.modules:
            return list(module) + list(segments)
        bound = self.bindings.get(module, {}).get(first)
        if bound is not None and first not in seen and bound[:1] != [first]:
            target = self.absolute(module, bound, seen + (first,))
            return None if target is None else target + rest
        return None

    def module_of(self, path):
        """The longest prefix of `path` that is a module."""
        for length in range(len(path), -1, -1):
            if tuple(path[:length]) in self.modules:
                return tuple(path[:length])
        return ()

    def sibling_edges(self):
        """{(from, to): [(file, line), ...]} between sibling modules, each reference lifted to the
        children of the two modules' deepest common ancestor."""
        edges = {}
        for module, segments, path, line in self.references:
            target = self.absolute(module, segments)
            if target is None:
                continue
            target = self.module_of(target)
            common = 0
            while common < min(len(module), len(target)) and module[common] == target[common]:
                common += 1
            if common == len(module) or common == len(target):
                continue  # the same module, or one inside the other
            edge = (module[: common + 1], target[: common + 1])
            edges.setdefault(edge, []).append((path, line))
        return edges


def cycles(edges):
    """Strongly connected sets of more than one node (Tarjan), each sorted."""
    graph = {}
    for source, target in edges:
        graph.setdefault(source, []).append(target)
        graph.setdefault(target, [])
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def crate_targets(root):
    """Every crate target root file under `root` (a folder with Cargo.toml and src/)."""
    for folder, folders, files in walk(root):
        if "Cargo.toml" in files:
            src = os.path.join(folder, "src")
            for name in ("lib.rs", "main.rs"):
                if os.path.exists(os.path.join(src, name)):
                    yield os.path.join(src, name)
            bins = os.path.join(src, "bin")
            if os.path.isdir(bins):
                for name in sorted(os.listdir(bins)):
                    if name.endswith(".rs"):
                        yield os.path.join(bins, name)


def module_name(module):
    return "crate::" + "::".join(module) if module else "crate"


def cycle_problems(root):
    problems = []
    for root_file in crate_targets(root):
        target = CrateTarget(root_file)
        edges = target.sibling_edges()
        for component in cycles(edges):
            members = set(component)
            lines = [f"import cycle in {os.path.relpath(root_file, root)}: " + ", ".join(map(module_name, component))]
            for (source, to), places in sorted(edges.items()):
                if source in members and to in members:
                    path, line = places[0]
                    more = f" (and {len(places) - 1} more)" if len(places) > 1 else ""
                    lines.append(
                        f"  {module_name(source)} -> {module_name(to)}: {os.path.relpath(path, root)}:{line}{more}"
                    )
            problems.append("\n".join(lines))
    return problems


# ---- file length -------------------------------------------------------------------------------


def walk(root):
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        yield folder, folders, files


def is_test_file(relative):
    parts = relative.split(os.sep)
    return "tests" in parts[:-1] or parts[-1] == "tests.rs" or parts[-1].endswith("_tests.rs")


def counted_lines(path):
    """The file's lines, without a Rust file's trailing `#[cfg(test)] mod ... { }` block."""
    with open(path, encoding="utf-8", errors="replace") as source:
        text = source.read()
    total = text.count("\n") + (not text.endswith("\n") and bool(text))
    if not path.endswith(".rs"):
        return total
    code = strip_comments_and_strings(text)
    pairs = matching_braces(code)
    for block in TRAILING_TEST_MOD.finditer(code):
        if not code[pairs.get(block.end() - 1, len(code)) + 1 :].strip():
            return text.count("\n", 0, block.start())
    return total


def length_problems(root):
    problems = []
    for folder, _, files in walk(root):
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if name.endswith(COUNTED_KINDS) and not is_test_file(relative):
                lines = counted_lines(path)
                if lines > MAX_LINES:
                    problems.append(f"{relative}: {lines} lines outside tests (at most {MAX_LINES})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    parser.add_argument("--root", default=default_root, help="the repository (default: this script's)")
    root = os.path.normpath(parser.parse_args().root)
    problems = cycle_problems(root) + length_problems(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} layout problem(s)", file=sys.stderr)
        return 1
    print("no import cycle between modules, no file over 500 lines outside tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
