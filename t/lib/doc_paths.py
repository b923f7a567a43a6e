"""doc_paths.py SRCDIR BUILDDIR - every repository path README.md and doc/*.md
name (a relative link, or a `path` in backticks under one of the tree's top
folders) exists: in the source tree, as a .in or .c it is made from, or in
the build tree.  One line per missing path; the last line counts them."""
import os, re, sys
top, build = sys.argv[1], sys.argv[2]
docs = ['README.md'] + sorted('doc/' + f for f in os.listdir(os.path.join(top, 'doc')) if f.endswith('.md'))
roots = ('examples', 'deploy', 'doc', 't', 'bench', 'systemd', 'etc', 'cli', 'common', 'daemons', 'proto', 'm4', 'build-aux', '.ci')
# made only by a make target of its own, not by the build the tests run
OUTPUTS = {'t/fuzz/bin'}  # `make fuzz`
KUBECTL_VERBS = {'exec', 'logs', 'describe', 'get', 'rollout', 'delete', 'edit', 'scale', 'restart', 'port-forward'}
bad = 0; n = 0
for d in docs:
    text = open(os.path.join(top, d), encoding='utf-8').read()
    base = os.path.dirname(d)
    cands = set()
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        u = m.group(1)
        if re.match(r'^[a-z]+:', u) or u.startswith('#'):
            continue
        cands.add(os.path.normpath(os.path.join(base, u.split('#')[0])))
    spans = [m.group(1) for m in re.finditer(r'`([^`\n]+)`', text)]
    spans += [m.group(1) for m in re.finditer(r'```[a-z]*\n(.*?)```', text, re.S)]
    for span in spans:
        prev = ''
        for tok in span.split():
            # kubectl's TYPE/NAME (kubectl logs deploy/decod) is no path
            after_verb = prev in KUBECTL_VERBS
            prev = tok
            if after_verb: continue
            tok = tok.strip('.,;:()')
            if tok.startswith('./'): tok = tok[2:]
            if not tok.startswith(tuple(r + '/' for r in roots)): continue
            if re.search(r'[<>*{}$…|\[\]=]', tok) or '...' in tok: continue
            tok = re.sub(r':\d+(:\d+)?$', '', tok)
            cands.add(os.path.normpath(tok))
    for c in sorted(cands - OUTPUTS):
        n += 1
        if not any(os.path.exists(p) for p in (os.path.join(top, c), os.path.join(top, c + '.in'),
                os.path.join(top, c + '.c'), os.path.join(build, c))):
            print(f'{d}: names {c}, which does not exist'); bad += 1
print(f'{n} paths, {bad} missing')
sys.exit(1 if bad else 0)
