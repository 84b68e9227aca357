#!/usr/bin/env python3
"""Every relative link in every tracked Markdown file resolves: the file exists, and a `#fragment`
names a heading of the target the way GitHub makes anchors (lower case, punctuation dropped,
spaces to hyphens, `-1`, `-2` for repeats). Links to other sites are not followed.

Usage: python3 scripts/check-links.py   (part of scripts/test.sh; exits 1 and lists every broken
link when one is found)
"""

import os
import re
import subprocess
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")


def prose_lines(path):
    """(line number, text) of every line outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                yield number, line


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path):
    seen = {}
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            yield base if count == 0 else f"{base}-{count}"


def main():
    os.chdir(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip())
    files = subprocess.check_output(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                                    text=True).split()
    known = {}
    checked, broken = 0, []
    for source in files:
        for number, line in prose_lines(source):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                checked += 1
                path, _, fragment = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
                if not os.path.exists(dest):
                    broken.append(f"{source}:{number}: {target}: no such file {dest}")
                elif fragment and dest.endswith(".md"):
                    if dest not in known:
                        known[dest] = set(anchors(dest))
                    if fragment not in known[dest]:
                        broken.append(f"{source}:{number}: {target}: no heading #{fragment} in {dest}")
    for line in broken:
        print(line)
    print(f"links: {checked} relative links in {len(files)} Markdown files, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
