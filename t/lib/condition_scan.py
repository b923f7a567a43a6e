#!/usr/bin/env python3
"""condition_scan - the condition reasons decod sets, from three places.

  condition_scan.py found DIR...   every reason the C sources under DIR set,
                                   one "REASON<TAB>FILE:LINE" per site
  condition_scan.py table HEADER   the rows of common/resource/condition.h, one
                                   "TYPE|REASON|STATUS|STAGE|MEANING" each
  condition_scan.py runbook FILE   the same five columns from each reason
                                   row of doc/runbook.md

A reason is "set" where a string literal (CamelCase, e.g. FetchError) is
passed as the `reason` parameter of any function that has one (found from
the sources' own definitions: status_set_condition, fetch_result_error,
s3t_not_ready, acl_report, ...), also through a ternary; where it is the
third member of a condition initializer { "Type", status, "Reason", ... };
or where it is assigned to something named reason.
"""
import os
import re
import sys

REASON = re.compile(r'^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$')   # CamelCase, not CAPS


def strip_comments(text):
    """text with comments blanked (newlines kept), strings left alone"""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def args_at(text, open_paren):
    """the top-level arguments of the call whose '(' is at open_paren"""
    depth, i, start, args = 0, open_paren, open_paren + 1, []
    while i < len(text):
        c = text[i]
        if c in '"\'':
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            i = j + 1
            continue
        if c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args
        elif c == ',' and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args


def literals(expr):
    """the string literals an expression may yield (not those inside calls)"""
    prev = None
    while prev != expr:
        prev, expr = expr, re.sub(r'\([^()]*\)', '()', expr)
    return [s for s in re.findall(r'"((?:[^"\\]|\\.)*)"', expr) if REASON.match(s)]


def sources(dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith('.c'):
                    p = os.path.join(root, f)
                    with open(p, encoding='utf-8', errors='replace') as fh:
                        yield p, strip_comments(fh.read())


def found(dirs):
    srcs = list(sources(dirs))
    # functions with a `const char *reason` parameter, and its position
    takes = {}
    decl = re.compile(r'\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*(?=[{;])')
    for _, text in srcs:
        for m in decl.finditer(text):
            params = [p.strip() for p in m.group(2).split(',')]
            for k, p in enumerate(params):
                if re.search(r'\bchar\s*\*\s*reason$', p):
                    takes[m.group(1)] = k
    hits = []
    init = re.compile(r'\{\s*"([A-Z]\w*)"\s*,\s*(?:"(?:True|False|Unknown)"|[a-z_]\w*)\s*,'
                      r'\s*"([A-Z]\w*)"')
    assign = re.compile(r'(?:\breason|->reason|\.reason|_reason)\s*=\s*"([A-Z]\w*)"')
    call = re.compile(r'\b(' + '|'.join(map(re.escape, takes)) + r')\s*\(') if takes else None
    for path, text in srcs:
        line = lambda pos: text.count('\n', 0, pos) + 1
        if call is not None:
            for m in call.finditer(text):
                args = args_at(text, m.end() - 1)
                k = takes[m.group(1)]
                if k >= len(args) or re.search(r'\bchar\s*\*', args[k]):
                    continue    # a definition or prototype, not a call
                for r in literals(args[k]):
                    hits.append((r, '%s:%d' % (path, line(m.start()))))
        for m in init.finditer(text):
            hits.append((m.group(2), '%s:%d' % (path, line(m.start()))))
        for m in assign.finditer(text):
            hits.append((m.group(1), '%s:%d' % (path, line(m.start()))))
    for r, where in hits:
        if REASON.match(r):
            print('%s\t%s' % (r, where))


def table(header):
    text = strip_comments(open(header, encoding='utf-8').read())
    row = re.compile(r'X\(\s*"(\w+)",\s*"(\w+)",\s*"(\w+)",\s*"(\w+)",\s*\\?\s*'
                     r'"((?:[^"\\]|\\.)*)"\s*\)')
    for m in row.finditer(text):
        print('|'.join(m.group(i).replace('\\"', '"') for i in range(1, 6)))


def runbook(path):
    for ln in open(path, encoding='utf-8'):
        cells = [c.strip() for c in ln.strip().strip('|').split('|')]
        if not ln.startswith('|') or len(cells) < 6:
            continue
        if not re.match(r'^`?[A-Z]\w*`?$', cells[0]) or cells[0] == 'Type':
            continue
        print('|'.join([cells[0].strip('`'), cells[1].strip('`'), cells[2].strip('`'),
                        cells[3].strip('`'), cells[4]]))


if __name__ == '__main__':
    mode, rest = sys.argv[1], sys.argv[2:]
    {'found': lambda: found(rest), 'table': lambda: table(rest[0]),
     'runbook': lambda: runbook(rest[0])}[mode]()
