#!/usr/bin/env python3
"""Tests of scripts/check-layout.py on small crates and files written to a temporary folder: a
planted import cycle (grouped, nested, inline and `super::` paths) fails the check, a parent and
its children using each other do not, a 501-line file fails and a test file or trailing test
block of any length does not.

Usage: python3 scripts/check-layout-test.py   (part of scripts/test.sh)
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-layout.py")


class CheckLayout(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        self.write("Cargo.toml", '[package]\nname = "mini"\n')

    def tearDown(self):
        self.folder.cleanup()

    def write(self, relative, text):
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as file:
            file.write(textwrap.dedent(text))

    def check(self):
        run = subprocess.run(
            [sys.executable, CHECK, "--root", self.root], capture_output=True, text=True, check=False
        )
        return run.returncode, run.stdout

    def test_modules_that_use_each_other_are_a_cycle(self):
        self.write("src/lib.rs", "mod a;\nmod b;\n")
        self.write("src/a.rs", "use crate::{b::{self, helper as h}, other};\npub fn f() {}\n")
        self.write("src/b.rs", "pub fn helper() { crate::a::f() }\n")
        status, output = self.check()
        self.assertEqual(status, 1, output)
        self.assertIn("import cycle in src/lib.rs: crate::a, crate::b", output)
        self.assertIn("crate::b -> crate::a: src/b.rs:1", output)

    def test_a_cycle_through_submodules_is_one_between_their_parents(self):
        self.write("src/lib.rs", "pub mod round;\npub mod engines;\n")
        self.write("src/round/mod.rs", "pub mod cpu;\npub mod repeat;\n")
        self.write("src/round/cpu.rs", "pub fn sample() {}\n")
        self.write("src/round/repeat.rs", "use super::cpu;\nuse crate::engines::postgres::Hook;\n")
        self.write("src/engines/mod.rs", "pub mod postgres {\n    pub struct Hook;\n}\npub mod quiet;\n")
        self.write("src/engines/quiet.rs", "fn wait() { super::super::round::cpu::sample() }\n")
        status, output = self.check()
        self.assertEqual(status, 1, output)
        self.assertIn("crate::engines, crate::round", output)
        self.assertIn("crate::engines -> crate::round: src/engines/quiet.rs:1", output)

    def test_a_name_bound_by_use_is_followed_in_inline_paths(self):
        self.write("src/main.rs", "mod x;\n")
        self.write("src/x/mod.rs", "mod a;\nmod b;\n")
        self.write("src/x/a.rs", "use crate::x as here;\nfn f() { here::b::g(); }\npub fn h() {}\n")
        self.write("src/x/b.rs", "pub fn g() { super::a::h() }\n")
        status, output = self.check()
        self.assertEqual(status, 1, output)
        self.assertIn("import cycle in src/main.rs: crate::x::a, crate::x::b", output)

    def test_parents_children_one_way_uses_and_test_code_are_no_cycle(self):
        self.write("src/lib.rs", "pub mod a;\npub mod b;\npub use a::Thing;\n")
        self.write("src/a/mod.rs", "mod inner;\npub struct Thing;\npub use inner::make;\n")
        self.write("src/a/inner.rs", "use super::Thing;\nuse crate::b::g;\npub fn make() -> Thing { g(); Thing }\n")
        self.write(
            "src/b.rs",
            """\
            // use crate::a;  (a comment)
            pub fn g() { let _ = "crate::a::make()"; }
            #[cfg(test)]
            use crate::a::Thing;
            #[cfg(test)]
            mod tests {
                use crate::a::make;
            }
            """,
        )
        status, output = self.check()
        self.assertEqual(status, 0, output)

    def test_a_file_of_501_lines_is_too_long_and_one_of_500_is_not(self):
        self.write("src/lib.rs", "mod long;\nmod fits;\n")
        self.write("src/long.rs", "fn f() {}\n" * 501)
        self.write("src/fits.rs", "fn f() {}\n" * 500)
        self.write("scripts/long.sh", "true\n" * 501)
        status, output = self.check()
        self.assertEqual(status, 1, output)
        self.assertIn("src/long.rs: 501 lines outside tests", output)
        self.assertIn("scripts/long.sh: 501 lines outside tests", output)
        self.assertNotIn("fits.rs", output)

    def test_tests_of_any_length_are_not_counted(self):
        self.write("src/lib.rs", "mod code;\n#[cfg(test)]\nmod code_tests;\n")
        body = "fn f() {}\n" * 400
        self.write("src/code.rs", body + "#[cfg(test)]\nmod tests {\n" + "    fn t() {}\n" * 300 + "}\n")
        self.write("src/code_tests.rs", "fn t() {}\n" * 600)
        self.write("src/round/tests.rs", "fn t() {}\n" * 600)
        self.write("tests/integration/main.rs", "fn t() {}\n" * 600)
        status, output = self.check()
        self.assertEqual(status, 0, output)

    def test_a_test_block_followed_by_code_is_counted(self):
        self.write("src/lib.rs", "fn f() {}\n" * 300 + "#[cfg(test)]\nmod tests {}\n" + "fn g() {}\n" * 300)
        status, output = self.check()
        self.assertEqual(status, 1, output)
        self.assertIn("src/lib.rs: 602 lines outside tests", output)


if __name__ == "__main__":
    unittest.main()
