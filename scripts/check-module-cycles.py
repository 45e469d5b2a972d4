#!/usr/bin/env python3
"""No import circles in shared/src: builds the module graph from `use crate::...`,
`use super::...` and qualified paths (test modules aside; a module's own children and
parents do not count) and fails on any strongly connected component of more than one
module. Which way dependencies point between top-level modules is check-layers.py's."""
import os,re,sys,itertools
root='shared/src'
mods={}
for dp,dn,fn in os.walk(root):
    for f in fn:
        if f.endswith('.rs'):
            p=os.path.join(dp,f); rel=os.path.relpath(p,root)[:-3]
            parts=rel.split('/')
            if parts[-1] in('mod','lib'): parts=parts[:-1]
            mods['::'.join(parts)]=p
def resolve(path, cur):
    segs=path.split('::')
    if segs[0]=='crate': base=[]; segs=segs[1:]
    elif segs[0]=='super':
        c=cur.split('::') if cur else []
        # file module: super of a file mod is its parent
        base=c[:-1]; segs=segs[1:]
        while segs and segs[0]=='super': base=base[:-1]; segs=segs[1:]
    elif segs[0]=='self': base=cur.split('::'); segs=segs[1:]
    else: return None
    best=None
    for i in range(len(segs),-1,-1):
        cand='::'.join(base+segs[:i])
        if cand in mods: best=cand; break
    return best
edges={m:set() for m in mods}
for m,p in mods.items():
    src=open(p).read()
    cut=re.search(r'#\[cfg\(test\)\]\s*mod \w+\s*\{',src)
    if cut: src=src[:cut.start()]
    for mm in re.finditer(r'\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)',src):
        t=resolve(mm.group(1),m)
        if t and t!=m and not m.startswith(t+'::') and not t.startswith(m+'::') and t!='':
            edges[m].add(t)
# find cycles via SCC
idx={};low={};st=[];on=set();res=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w); low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: res.append(comp)
for v in edges:
    if v not in idx: sc(v)
for r in res: print('cycle:',sorted(r))
print(f'[cycles] {len(mods)} modules of shared/src, {len(res)} import circles')
sys.exit(1 if res else 0)
