"""THIRD_PARTY_NOTICES, which `make dist` puts in the tarball (the Makefile's cp line is
checked in manpage_test.py), the .deb and the image carry: every library of its table has
its copyright file in it, and the licence texts those files refer to by a Debian path are in
it whole, so a user of the tarball on any system has every text."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

NOTICES = os.path.join(support.REPO_ROOT, "THIRD_PARTY_NOTICES")

# A phrase of each bundled library's own licence, as its copyright file words it.
LICENCE_PHRASES = {
    "curl": "Permission to use, copy, modify, and distribute this software for any purpose",
    "OpenSSL": "Apache License",
    "llhttp": "Permission is hereby granted, free of charge",
    "zlib": "This software is provided 'as-is', without any express or implied",
    "c-ares": "Permission to use, copy, modify, and distribute this",
    "libseccomp": "GNU Lesser General Public License",
    "GNU C Library": "the terms of the GNU Lesser General Public",
    "GCC runtime": "GCC RUNTIME LIBRARY EXCEPTION",
    "{fmt}": "Permission is hereby granted, free of charge",
    "toml++": "Permission is hereby granted, free of charge",
    "RapidJSON": "Permission is hereby granted, free of charge",
    "CLI11": "Redistribution and use in source and binary forms",
}


class NoticesTest(unittest.TestCase):
    def setUp(self):
        with open(NOTICES, encoding="utf-8") as f:
            self.text = f.read()
        # Sections: a rule, a title line, a rule.
        self.sections = {}
        parts = re.split(r"\n={99}\n(.*)\n={99}\n", self.text)
        for title, body in zip(parts[1::2], parts[2::2]):
            self.sections[title] = body

    def section(self, name):
        found = [body for title, body in self.sections.items() if title.startswith(name)]
        self.assertEqual(len(found), 1, f"one section for {name}: {list(self.sections)}")
        return found[0]

    def test_every_bundled_library_has_its_copyright_file(self):
        table = re.findall(r"^\| ([^|]+?) \|", self.text, re.M)
        components = [c for c in table if c not in ("component", "---")]
        self.assertEqual(len(components), len(LICENCE_PHRASES), components)
        for name, phrase in LICENCE_PHRASES.items():
            self.assertTrue(any(c.startswith(name) for c in components), name)
            self.assertIn(phrase, self.section(name), name)

    def test_the_licence_texts_referred_to_are_there_whole(self):
        for name, first, last in (
                ("Apache-2.0", "Apache License", "END OF TERMS AND CONDITIONS"),
                ("LGPL-2.1", "GNU LESSER GENERAL PUBLIC LICENSE", "END OF TERMS AND CONDITIONS"),
                ("GPL-3", "GNU GENERAL PUBLIC LICENSE", "END OF TERMS AND CONDITIONS")):
            body = self.section(f"Licence text: {name}")
            self.assertIn(first, body[:400], name)
            self.assertIn(last, body, name)
        # The texts are in the file; the header no longer sends the reader to a Debian path.
        head = self.text[:self.text.index("\n" + "=" * 99 + "\n")]
        self.assertNotIn("/usr/share/common-licenses", head)


if __name__ == "__main__":
    unittest.main(verbosity=2)
