#!/usr/bin/env python3
"""The flag reference (docs/serving.md) and the binary agree: every long flag `parley CMD --help` lists for
serve, generate, embed, convert, gen-model and quantize appears in the reference's tables, and every flag the
reference's tables name exists in some command's --help.
Usage: check_flag_docs.py PARLEY docs/serving.md"""
import re
import subprocess
import sys

COMMANDS = ['serve', 'generate', 'embed', 'convert', 'gen-model', 'quantize', 'admin']


def help_flags(parley, command):
    text = subprocess.run([parley, command, '--help'], capture_output=True, text=True, check=True).stdout
    flags = set()
    for line in text.splitlines():
        match = re.match(r'\s+(?:-\w,)?((?:--[\w-]+,?)+)', line)
        if match:
            flags.update(f.lstrip('!') for f in match.group(1).split(',') if f.startswith('--'))
    return flags - {'--help'}


def documented_flags(markdown):
    flags = set()
    for line in markdown.splitlines():
        if line.startswith('| `--'):  # a flag table's row: its first cell names one flag or several
            first_cell = line.split('|')[1]
            flags.update(re.findall(r'`(--[\w-]+)', first_cell))
    return flags


def main():
    parley, reference = sys.argv[1], sys.argv[2]
    documented = documented_flags(open(reference, encoding='utf-8').read())
    in_binary = set()
    problems = []
    for command in COMMANDS:
        flags = help_flags(parley, command)
        in_binary |= flags
        missing = sorted(flags - documented)
        if missing:
            problems.append(f'parley {command} --help lists flags {reference} does not document: {", ".join(missing)}')
    stale = sorted(documented - in_binary)
    if stale:
        problems.append(f'{reference} documents flags no command has: {", ".join(stale)}')
    for p in problems:
        print('FAIL', p)
    print(f'{len(in_binary)} flags in --help, {len(documented)} documented: {"FAIL" if problems else "PASS"}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
