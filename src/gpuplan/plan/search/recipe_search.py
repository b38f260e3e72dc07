"""The joint search over memory-saving knobs and the split of the global batch, for one layout group.

The space is the knob lattice (ZeRO stage, offload, checkpointing, optimizer: plan/search/candidates.py) times
the batch options of one DP size (plan/search/recipe.py ``batch_options``: micro-batch 1, 2, 4, ... with the
accumulation that keeps the global batch). Two monotone facts bound it:

- memory never grows up the lattice and never shrinks with the micro-batch (activations and logits grow
  with it; at a fixed global batch a larger micro-batch never means more micro-batches in flight);
- at one micro-batch speed never improves up the lattice, and without a pipeline a larger micro-batch
  is never slower (fewer micro-batch launches, the same gradient all-reduce per step).

So without a pipeline the fastest recipe of a config is its largest micro-batch that fits, and a config
matters only if it fits a larger micro-batch than every config below it: :func:`walk_recipes` finds
exactly those (config, option) pairs. With a pipeline a smaller micro-batch means more micro-batches per
step and a smaller bubble ((p-1)/(v m), Narayanan et al. 2021 section 2.2), so every option between the
largest that a lower config fits and the config's own largest is kept, and the time model decides.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence

from gpuplan.plan.search.candidates import Knobs, _structure, walk_lattice


_Rel = dict[Knobs, tuple[Knobs, ...]]
_DOWNS: dict[int, tuple[tuple[Knobs, ...], _Rel, _Rel, dict[Knobs, frozenset[Knobs]]]] = {}


def _downs(configs: tuple[Knobs, ...]) -> tuple[_Rel, _Rel, dict[Knobs, frozenset[Knobs]]]:
    """Each config's lower covers (one step less saving), every config it dominates, and every config that
    dominates it (itself included); computed once per lattice (``lattice`` returns the same tuple object for
    the same arguments: looked up by identity)."""
    got = _DOWNS.get(id(configs))
    if got is None or got[0] is not configs:
        _mins, ups, _by_level = _structure(configs)
        downs: dict[Knobs, list[Knobs]] = {k: [] for k in configs}
        for k, above in ups.items():
            for u in above:
                downs[u].append(k)
        below = {k: tuple(j for j in configs if j != k and k.dominates(j)) for k in configs}
        up_set = {k: frozenset(j for j in configs if j.dominates(k)) for k in configs}
        got = _DOWNS[id(configs)] = (configs, {k: tuple(v) for k, v in downs.items()}, below, up_set)
    return got[1], got[2], got[3]


def walk_recipes(configs: Sequence[Knobs], n: int, fits: Callable[[Knobs, int], bool],
                 gpu_fits: Callable[[Knobs, int], bool], *, pipelined: bool = False,
                 prune: Callable[[Knobs], bool] | None = None,
                 faster: Callable[[Knobs, int], bool] | None = None,
                 guess: Callable[[Knobs, int], int | None] | None = None,
                 known: Callable[[Knobs, int], bool] | None = None) -> Iterator[tuple[Knobs, int, int]]:
    """The (config, option index) pairs that can be fastest, options ordered by growing memory, each with the
    largest option the config fits; yielded as found (configs bottom-up, each config's options ascending)
    so that the caller can time them and prune. With a pipeline a config climbs one option at a time while
    ``faster(k, i)`` says the step at option ``i`` beat the one below (the caller has timed both); a config
    that stopped because it got slower leaves nothing to the configs above it (at each option they are
    slower, and beyond its stop the bubble only grows).

    ``fits(k, i)``: the GPU and host memory hold config ``k`` at option ``i``; ``gpu_fits``: the GPU alone
    (only GPU memory is monotone in the config: offload needs more host RAM). ``prune(k)``: True when no
    config at or above ``k`` can beat what the caller has already timed (its speed at the largest option,
    memory ignored, is slower); they are skipped unprobed. Exact under the module's monotonicity; the
    estimates stay close to one walk of the lattice: (1) the minimal configs at the smallest option
    (:func:`walk_lattice`); (2) bottom-up, each config is tried just above the largest option a config below
    it fits (or at its bound when that estimate is at hand), and bisected up to its bound (a GPU miss of a
    config bounds every config below it), guided by a prediction from the last estimate.
    """
    if n <= 0:
        return
    configs = tuple(configs)
    mins0 = walk_lattice(list(configs), lambda k: fits(k, 0), lambda k: gpu_fits(k, 0))
    if n == 1 or not mins0:
        for k in mins0:
            if prune is None or not prune(k):
                yield (k, 0, 0)
        return
    _mins, _ups, by_level = _structure(configs)
    downs, below, up_set = _downs(configs)
    in_above = frozenset().union(*(up_set[m] for m in mins0))
    above = [k for k in by_level if k in in_above]   # ascending: the rest never fits
    bound: dict[Knobs, int] = {}   # highest option a config may fit on the GPU (failures of configs above it)

    def try_at(k: Knobs, i: int) -> bool:
        ok = fits(k, i)
        if not ok and not gpu_fits(k, i):
            for j in below[k] + (k,):
                if j in in_above and bound.get(j, n - 1) >= i:
                    bound[j] = i - 1
        return ok

    reach: dict[Knobs, int] = {}   # highest option at which the config or one below it fits
    pruned: set[Knobs] = set()
    for k in above:
        if any(d in pruned for d in downs[k]):
            pruned.add(k)
            continue
        low = max((reach[d] for d in downs[k] if d in reach), default=-1)
        high = bound.get(k, n - 1)
        if low >= high:
            reach[k] = low
            continue
        lo, fits_lo = max(0, low + 1), low < 0 and k in mins0
        if prune is not None and not pipelined and not fits_lo and not (known and known(k, n - 1)):
            # the bound costs a time estimate: first the one cheap probe that may show k is not needed at all
            if not try_at(k, lo):
                reach[k] = low
                continue
            fits_lo = True
        if prune is not None and prune(k):
            pruned.add(k)
            continue
        if pipelined:
            reach[k] = yield from _climb(k, lo, high, try_at, faster, known=fits_lo)
            continue
        got = _largest(k, lo, high, try_at, known_lo=fits_lo, guess=guess, known=known)
        reach[k] = max(low, got)
        if got > low:
            yield (k, got, got)


def _climb(k: Knobs, lo: int, hi: int, try_at: Callable[[Knobs, int], bool],
           faster: Callable[[Knobs, int], bool] | None, *, known: bool) -> Generator[tuple[Knobs, int, int], None, int]:
    """Options lo, lo + 1, ... of ``k`` while they fit and get faster; returns how far it reaches (``hi`` when it
    stopped because it got slower: nothing above it can win there)."""
    if not known and not try_at(k, lo):
        return lo - 1
    i = lo
    while True:
        yield (k, i, i)
        if faster is not None and i > lo and not faster(k, i):
            return hi
        if i + 1 > hi or not try_at(k, i + 1):
            return i
        i += 1


def _largest(k: Knobs, lo: int, hi: int, try_at: Callable[[Knobs, int], bool], *, known_lo: bool = False,
             guess: Callable[[Knobs, int], int | None] | None = None,
             known: Callable[[Knobs, int], bool] | None = None) -> int:
    """The largest option in [lo, hi] at which ``k`` fits (lo - 1 if none). The bound first when its estimate
    is already at hand (``known``: a speed bound computed it); else the low end first (a config that does not
    fit just above what the configs below it fit is done after one probe); then where ``guess`` (a prediction
    from the last estimate) points, or the middle."""
    if hi < lo:
        return lo - 1
    good, bad, last = (lo if known_lo else lo - 1), hi + 1, None
    if known is not None and known(k, hi):
        if try_at(k, hi):
            return hi
        bad = last = hi
    elif not known_lo:
        if not try_at(k, lo):
            return lo - 1
        good = last = lo
    else:
        last = lo
    while bad - good > 1:
        g = guess(k, last) if guess is not None and last is not None else None
        mid = g if g is not None and good < g < bad else (good + bad) // 2
        if try_at(k, mid):
            good = mid
        else:
            bad = mid
        last = mid
    return good
