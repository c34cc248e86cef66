"""Hostlists, the one Python implementation: gpu[01-04,07] <-> gpu01 gpu02 gpu03 gpu04 gpu07.

scripts/cluster (which writes slurm.conf, topology.conf and mlsched.conf from a
shape file) and bench/replay (which reads them back) both import this module, so
the names they agree on are read one way. tests/tools/check-hostlist.py checks it
against Slurm's own expansion (`scontrol show hostnames`); src/core/hostlist is
the C++ one the plugins and the tool use.
"""

import re


def _split_top_level(expr):
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ']' in hostlist %r" % expr)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise ValueError("unbalanced '[' in hostlist %r" % expr)
    parts.append(cur)
    return [p for p in parts if p]


def _expand_one(item):
    """Expand one hostlist item, which may contain several bracket groups."""
    start = item.find("[")
    if start < 0:
        return [item]
    end = item.find("]", start)
    prefix, ranges, rest = item[:start], item[start + 1:end], item[end + 1:]
    numbers = []
    for rng in ranges.split(","):
        lo, _, hi = rng.partition("-")
        hi = hi or lo
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise ValueError("bad range %r in hostlist %r" % (rng, item))
        # Zero padding follows the width of the lower bound, as in gpu[01-16].
        numbers += [str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1)]
    tails = _expand_one(rest)
    return [prefix + num + tail for num in numbers for tail in tails]


def hostlist_expand(expr):
    """'gpu[01-03],cpu1' -> ['gpu01', 'gpu02', 'gpu03', 'cpu1']."""
    names = []
    for item in _split_top_level(expr.strip()):
        names += _expand_one(item)
    return names


def hostlist_compress(names):
    """['gpu01', 'gpu02', 'gpu04'] -> 'gpu[01-02,04]' (order of prefixes kept)."""
    split = [re.match(r"^(.*?)(\d*)$", name).groups() for name in names]
    # Zero-padded numbers (gpu01) fix the width of their prefix; gpu10 then joins them.
    padded = {pre: len(d) for pre, d in split if len(d) > 1 and d.startswith("0")}
    groups, order = {}, []
    for prefix, digits in split:
        width = padded.get(prefix, 0) if len(digits) == padded.get(prefix) else 0
        key = (prefix, width if digits else None)
        if key not in groups:
            groups[key] = []
            order.append(key)
        if digits and int(digits) not in groups[key]:
            groups[key].append(int(digits))
    out = []
    for prefix, width in order:
        nums = sorted(groups[(prefix, width)])
        if width is None:
            out.append(prefix)
            continue
        fmt = lambda n: str(n).zfill(width)
        if len(nums) == 1:
            out.append(prefix + fmt(nums[0]))
            continue
        ranges, lo, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(fmt(lo) if lo == prev else "%s-%s" % (fmt(lo), fmt(prev)))
            lo = prev = n
        out.append("%s[%s]" % (prefix, ",".join(ranges)))
    return ",".join(out)


