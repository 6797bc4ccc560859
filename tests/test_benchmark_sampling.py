"""How sure a benchmark row is, on a CPU: the median's distribution-free 95 % interval, the
rule that samples in rounds until it is narrow enough or a time cap is spent, the timing
loop's own cost taken off per-call times, the working set against the L2, A/A runs, and
rows handed over as soon as they are measured.  Synthetic samples, fake timers, a fake
clock."""

import math
import random
import types

import pytest
import torch

from checks.benchmark import measuring, rows as rowlib, runner, statistics
from checks.benchmark.statistics import RoundTimer
from checks.benchmark.timed_calls import TimedCall

# --- the median's interval ----------------------------------------------------------------


def binomial_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


@pytest.mark.parametrize("n", list(range(1, 60)) + [100, 257, 1000])
def test_median_ranks_cover_95_percent_and_are_the_narrowest_that_do(n):
    ranks = statistics.median_ranks(n)
    if n < 6:  # even [min, max] misses the median with probability 2 / 2**n > 5 %
        assert ranks is None
        return
    lo, hi = ranks
    assert hi == n - 1 - lo  # symmetric
    l = lo + 1  # 1-based
    assert 1 - 2 * binomial_cdf(l - 1, n) >= 0.95
    assert 1 - 2 * binomial_cdf(l, n) < 0.95  # one rank narrower would not be sure enough


def test_known_intervals():
    assert statistics.median_ranks(6) == (0, 5)
    assert statistics.median_ranks(10) == (1, 8)
    assert statistics.median_ranks(100) == (39, 60)  # the textbook 40th and 61st values
    assert statistics.median_interval([5, 1, 4, 2, 3]) is None
    assert statistics.median_interval([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]) == (2.0, 9.0)


def test_large_samples_use_the_normal_approximation_within_a_rank(monkeypatch):
    n = 6001
    approx = statistics.median_ranks(n)
    statistics.median_ranks.cache_clear()
    monkeypatch.setattr(statistics, "EXACT_RANKS_UP_TO", 10**6)
    exact = statistics.median_ranks(n)
    statistics.median_ranks.cache_clear()
    assert abs(approx[0] - exact[0]) <= 1 and abs(approx[1] - exact[1]) <= 1


def test_the_interval_covers_the_true_median_of_a_skewed_distribution():
    rng = random.Random(7)
    true_median = math.log(2)  # of an exponential with rate 1
    trials, hits = 2000, 0
    for _ in range(trials):
        low, high = statistics.median_interval([rng.expovariate(1.0) for _ in range(25)])
        hits += low <= true_median <= high
    assert hits / trials >= 0.94  # 95 % or more, give or take the trials' own noise


def test_sample_stats_carry_the_interval_and_how_they_were_sampled():
    s = statistics.sample_stats([0.001 * x for x in range(1, 11)], {"rounds": 3, "converged": False})
    assert (s["median_low_us"], s["median_high_us"]) == pytest.approx((2.0, 9.0))
    assert s["rel_half_width"] == pytest.approx(3.5 / 5.5)
    assert (s["n_samples"], s["rounds"], s["converged"]) == (10, 3, False)
    few = statistics.sample_stats([0.001, 0.002])
    assert few["median_low_us"] is None and few["rel_half_width"] is None and few["converged"] is None


# --- sampling until sure --------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def rounds_of(clock, seconds, draw, per_round=10):
    """A round that takes ``seconds`` (a number or a list, one per round) of fake time."""
    state = {"k": 0}

    def next_round():
        k = state["k"]
        state["k"] += 1
        clock.t += seconds[min(k, len(seconds) - 1)] if isinstance(seconds, list) else seconds
        return [draw() for _ in range(per_round)]

    return next_round, state


def test_quiet_samples_stop_after_the_first_round():
    clock, rng = FakeClock(), random.Random(1)
    nxt, state = rounds_of(clock, 0.3, lambda: 0.010 * (1 + rng.uniform(-0.001, 0.001)))
    got = statistics.until_sure(nxt, rel_target=0.01, cap_s=10.0, clock=clock)
    assert got["converged"] and got["rounds"] == 1 and state["k"] == 1
    assert len(got["samples"]) == 10 and got["rel_half_width"] < 0.01


def test_noisy_samples_run_to_the_cap_and_never_past_it():
    clock, rng = FakeClock(), random.Random(2)
    nxt, state = rounds_of(clock, 0.3, lambda: rng.uniform(0.005, 0.015))
    got = statistics.until_sure(nxt, rel_target=0.01, cap_s=1.0, clock=clock)
    assert not got["converged"]
    assert got["rounds"] == 3  # 0.9 s spent; a fourth round would end at 1.2 s
    assert got["elapsed_s"] <= 1.0 and len(got["samples"]) == 30


@pytest.mark.parametrize("seed", range(20))
def test_rounds_of_any_length_never_pass_the_cap(seed):
    rng = random.Random(seed)
    first = rng.uniform(0.05, 0.5)  # the first round (set-up and warm-up) is the longest
    lengths = [first] + [rng.uniform(0.01, first) for _ in range(200)]
    clock = FakeClock()
    nxt, _ = rounds_of(clock, lengths, lambda: rng.uniform(0.005, 0.015))
    cap = rng.uniform(first, 3.0)
    got = statistics.until_sure(nxt, rel_target=0.001, cap_s=cap, clock=clock, max_samples=10**6)
    assert got["elapsed_s"] <= cap and not got["converged"]


def test_noise_that_settles_converges_before_the_cap():
    clock, rng = FakeClock(), random.Random(3)
    nxt, state = rounds_of(clock, 0.1, lambda: rng.gauss(0.010, 0.0004))  # 4 % spread
    got = statistics.until_sure(nxt, rel_target=0.01, cap_s=100.0, clock=clock)
    assert got["converged"] and 1 < got["rounds"] < 100 and got["elapsed_s"] < 100.0


def test_sample_count_bound_and_empty_rounds():
    clock, rng = FakeClock(), random.Random(4)
    nxt, _ = rounds_of(clock, 0.001, lambda: rng.uniform(0.005, 0.015))
    got = statistics.until_sure(nxt, rel_target=0.0001, cap_s=1e9, clock=clock, max_samples=50)
    assert len(got["samples"]) == 50 and not got["converged"]
    with pytest.raises(ValueError):
        statistics.until_sure(lambda: [], rel_target=0.01, cap_s=1.0, clock=clock)


def episodes(clock, levels, per_round=5, seconds=0.01):
    """Rounds whose loops agree within 1 % but whose level changes from round to round,
    as a host's slow episodes of tens of milliseconds make per-call loops do."""
    rng, state = random.Random(7), {"k": 0}

    def next_round():
        level = levels[state["k"] % len(levels)]
        state["k"] += 1
        clock.t += seconds
        return [level * (1 + rng.uniform(-0.005, 0.005)) for _ in range(per_round)]

    return next_round


def test_a_round_inside_one_episode_does_not_pass_for_a_sure_median():
    """Counted as independent samples, five tight loops of one round look sure at once;
    by the rounds' medians, it samples on until it has seen the episodes."""
    levels = [0.040, 0.040, 0.060, 0.040, 0.040, 0.040, 0.060, 0.040]
    clock = FakeClock()
    loose = statistics.until_sure(episodes(clock, levels, 11), rel_target=0.02, cap_s=2.0, clock=clock)
    assert loose["converged"] and loose["rounds"] == 1
    clock = FakeClock()
    by_round = statistics.until_sure(
        episodes(clock, levels, 11), rel_target=0.02, cap_s=2.0, clock=clock, by_round=True, min_span_s=0.06
    )
    assert by_round["rounds"] >= 6
    assert statistics.quantile(by_round["samples"], 0.5) == pytest.approx(0.040, rel=0.01)


def test_the_shortest_span_holds_even_when_the_first_rounds_agree():
    clock, rng = FakeClock(), random.Random(5)
    nxt, state = rounds_of(clock, 0.01, lambda: 0.010 * (1 + rng.uniform(-0.001, 0.001)), per_round=5)
    got = statistics.until_sure(
        nxt, rel_target=0.01, cap_s=10.0, clock=clock, by_round=True, min_span_s=0.115
    )
    assert got["converged"] and got["rounds"] == 12 and state["k"] == 12


def test_a_slow_call_needs_only_the_six_rounds_an_interval_needs():
    """The shortest span is in seconds, not rounds: a call of a quarter second per round
    converges after six rounds instead of running to the cap."""
    clock, rng = FakeClock(), random.Random(6)
    nxt, _ = rounds_of(clock, 0.25, lambda: 0.050 * (1 + rng.uniform(-0.001, 0.001)), per_round=5)
    got = statistics.until_sure(nxt, rel_target=0.02, cap_s=2.0, clock=clock, by_round=True, min_span_s=0.2)
    assert got["converged"] and got["rounds"] == 6


def test_the_reported_interval_is_that_of_the_rounds_medians():
    us_rounds = [[40.0] * 5, [41.0] * 5, [60.0] * 5, [40.5] * 5, [59.0] * 5, [40.2] * 5, [40.1] * 5]
    flat_ms = [u / 1e3 for r in us_rounds for u in r]
    loose = statistics.sample_stats(flat_ms, {"rounds": 7})
    blocked = statistics.sample_stats(flat_ms, {"rounds": 7, "round_size": 5})
    assert blocked["round_size"] == 5 and "round_size" not in loose
    assert blocked["median_us"] == loose["median_us"]
    width = {k: r["median_high_us"] - r["median_low_us"] for k, r in (("loose", loose), ("blocked", blocked))}
    assert width["blocked"] > width["loose"]
    assert statistics.block_medians([1, 2, 3, 10, 20, 30, 7], 3) == [2, 20, 7]


def test_the_per_call_timer_judges_by_rounds_and_the_device_timer_by_samples():
    from checks.benchmark import timing

    timers, said = timing.make_timers("both", "warm", quick=False)
    assert timers["events"].by_round and timers["events"].min_span_s >= 0.1
    assert not timers["graph"].by_round and "the interval over the rounds' medians" in said
    quick, _ = timing.make_timers("both", "warm", quick=True)
    assert quick["events"].by_round and quick["events"].min_span_s > 0


# --- the runner with round timers -----------------------------------------------------------


REGISTRY: dict = {}  # variant fn -> its name, for the fake timers


def make_spec(n=32):
    spec = types.ModuleType("sampling_spec")
    spec.SHAPES = [dict(name=str(n), role="comparison", n=n)]
    spec.DTYPES = ["fp32"]

    def make_inputs(shape, dtype, device, seed):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(shape["n"], generator=g).to(device, dtype)}

    spec.make_inputs = make_inputs
    spec.oracle = lambda inputs, shape: inputs["x"].double() * 2
    spec.work = lambda shape, dtype: {"bytes": shape["n"] * 8, "flops": None}

    def variants(mod, inputs, shape):
        x = inputs["x"]
        vs = [
            dict(name="quiet", role="candidate", config={}, fn=lambda: x * 2),
            dict(name="noisy", role="candidate", config={}, fn=lambda: x + x),
            dict(name="torch", role="baseline", config={}, fn=lambda: torch.mul(x, 2)),
        ]
        for v in vs:
            REGISTRY[v["fn"]] = v["name"]
        return vs

    spec.variants = variants
    return spec


def name_of(timed) -> str:
    """The variant a TimedCall times; the empty candidate (the harness) is no variant."""
    return REGISTRY.get(timed.fns[0], "(empty)")


def fake_round_timer(clock, per_variant_ms, log, seconds=0.25, rel_target=0.01, cap_s=1.0, harness=False):
    """A RoundTimer whose rounds take ``seconds`` of fake time and call the timed callable
    once; ``per_variant_ms(name, rng)`` draws each sample; ``log`` gets each round's
    variant name."""

    def sampler(fn):
        rng = random.Random(0)

        def next_round():
            fn()
            log.append(name_of(fn))
            clock.t += seconds
            return [per_variant_ms(name_of(fn), rng) for _ in range(10)]

        return next_round

    return RoundTimer(sampler, rel_target, cap_s, harness=harness)


def bench(timers, clock, **kw):
    rows = runner.run_op(
        "sampling_test",
        make_spec(),
        None,
        None,
        dtypes=["fp32"],
        timers=timers,
        ceilings={"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0},
        device="cpu",
        warm_calls=1,
        clock=clock,
        **kw,
    )
    return {r["variant"]: r for r in rows}


def draw(name, rng):
    if name == "noisy":
        return rng.uniform(0.005, 0.015)
    if name == "(empty)":
        return 0.001
    return 0.010 * (1 + rng.uniform(-0.001, 0.001))


def test_rows_record_their_interval_rounds_and_whether_they_converged():
    clock, log = FakeClock(), []
    rows = bench({"graph": fake_round_timer(clock, draw, log)}, clock)
    quiet, noisy = rows["quiet"], rows["noisy"]
    assert quiet["status"] == "ok" and quiet["converged"] is True and quiet["rounds"] == 1
    assert quiet["median_low_us"] <= quiet["median_us"] <= quiet["median_high_us"]
    assert quiet["n_samples"] == 10 and quiet["rel_half_width"] <= 0.01
    assert noisy["status"] == "ok" and noisy["converged"] is False
    assert noisy["rounds"] == 4 and noisy["n_samples"] == 40  # 4 x 0.25 s fills the 1 s cap
    assert noisy["median_high_us"] - noisy["median_low_us"] > 0.02 * noisy["median_us"]
    assert log.count("noisy") == 4


def test_the_harness_cost_is_measured_once_per_rotation_and_taken_off_per_call_times():
    clock, log = FakeClock(), []
    timers = {
        "graph": fake_round_timer(clock, lambda name, rng: 0.008, log),
        "events": fake_round_timer(
            clock, lambda name, rng: 0.001 if name == "(empty)" else 0.011, log, harness=True
        ),
    }
    rows = bench(timers, clock)
    quiet = rows["quiet"]
    assert quiet["harness_us"] == pytest.approx(1.0)
    assert quiet["per_call_us"] == pytest.approx(10.0)  # 11 us in the loop, 1 of them the loop's
    assert quiet["per_call"]["samples_us"][0] == pytest.approx(10.0)
    assert quiet["device_us"] == pytest.approx(8.0) and quiet["host_us"] == pytest.approx(2.0)
    # the same rotation for every variant of the shape: the empty candidate ran once
    assert log.count("(empty)") == 1
    assert all(r["harness_us"] == pytest.approx(1.0) for r in rows.values())


def test_a_device_bound_per_call_time_is_never_below_the_device_time():
    r = statistics.add_timings(
        rowlib.new_row("op", None, "fp32", "v", "candidate"),
        graph_ms=[0.020] * 6,
        events_ms=[0.0201] * 6,
        harness_us=0.5,
    )
    assert r["per_call"]["median_us"] == pytest.approx(19.6)
    assert r["per_call_us"] == pytest.approx(20.0) and r["host_us"] == 0.0


def test_a_plain_timer_is_one_round_with_no_target():
    clock = FakeClock()
    rows = bench({"events": lambda fn: [0.01] * 8}, clock)
    q = rows["quiet"]
    assert q["rounds"] == 1 and q["converged"] is None and q["harness_us"] is None
    assert q["median_low_us"] == pytest.approx(10.0)


def test_the_empty_candidate_rotates_the_same_tensors(monkeypatch):
    bumped = []
    monkeypatch.setattr(torch.autograd.graph, "increment_version", lambda ts: bumped.append(ts))
    a, b = torch.zeros(4), torch.zeros(4)
    timed = TimedCall([lambda: a * 2, lambda: b * 2], [[a], [b]])
    for call in (timed, timed.empty()):
        bumped.clear()
        outs = [call() for _ in range(4)]
        assert [ts[0] is a for ts in bumped] == [True, False, True, False]  # one bump per call
        assert all(len(ts) == 1 for ts in bumped)
    assert outs == [None] * 4  # the empty candidate does nothing else


# --- the working set against the L2 ---------------------------------------------------------


def two_calls(fn):
    fn(), fn()  # one call on each input set
    return [0.01] * 6


def test_working_set_counts_every_input_set_and_an_output_per_set():
    clock = FakeClock()
    rows = bench({"graph": two_calls}, clock, l2_bytes=200)
    for r in rows.values():  # two input sets of 32 floats and an output for each: 4 x 128 bytes
        assert r["working_set_bytes"] == 512 and r["l2_bytes"] == 200
        assert r["colder_than_label"] is True
    roomy = bench({"graph": two_calls}, clock, l2_bytes=50 * 2**20)
    assert all(r["colder_than_label"] is False for r in roomy.values())
    cold = bench({"events": two_calls}, clock, l2_bytes=200, cache="cold")
    assert all(r["colder_than_label"] is None and r["working_set_bytes"] == 512 for r in cold.values())


def test_a_view_counts_its_storage_once():
    base = torch.zeros(64)
    timed = TimedCall([lambda: base[:8]], [[base[:32], base[32:]]])
    timed()
    assert measuring.working_set_bytes(timed) == 256
    assert statistics.cache_state(None, 100, "warm")["colder_than_label"] is None


# --- A/A --------------------------------------------------------------------------------------


def test_aa_times_every_variant_twice_and_says_how_far_they_disagree():
    order = []

    def graph(fn):
        order.append(("graph", len([o for o in order if o[0] == "graph"])))
        fn()
        return [0.010] * 6 if len(order) % 4 in (1, 2) else [0.011] * 6

    def events(fn):
        order.append(("events", 0))
        fn()
        return [0.020] * 6

    rows = bench({"graph": graph, "events": events}, FakeClock(), aa=True)
    assert [k for k, _ in order[:4]] == ["graph", "events", "graph", "events"]  # A then A again
    q = rows["quiet"]
    assert q["aa"]["device_us"] == [pytest.approx(10.0), pytest.approx(11.0)]
    assert q["aa"]["device_diff"] == pytest.approx(0.1)
    assert q["aa"]["per_call_diff"] == pytest.approx(0.0)
    summary = statistics.aa_summary(list(rows.values()))
    assert summary["device"]["n"] == 3 and summary["per_call"]["worst"] == pytest.approx(0.0)
    assert bench({"graph": graph}, FakeClock())["quiet"]["aa"] is None


def test_disagreement_and_spread():
    assert statistics.disagreement(10.0, 20.5) == pytest.approx(1.05)
    assert statistics.disagreement(20.5, 10.0) == pytest.approx(1.05)
    assert statistics.disagreement(None, 1.0) is None and statistics.disagreement(0.0, 1.0) is None
    s = statistics.spread([0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 1.0, None])
    assert s["n"] == 11 and s["median"] == pytest.approx(0.05) and s["worst"] == 1.0
    assert s["p90"] == pytest.approx(0.09)
    assert statistics.spread([]) == {"n": 0, "median": None, "p90": None, "worst": None}


# --- rows handed over as soon as they are measured -------------------------------------------


def test_on_row_gets_each_row_before_the_next_is_timed():
    seen, timed_when = [], []

    def timer(fn):
        timed_when.append(len(seen))
        fn()
        return [0.01] * 6

    rows = bench({"graph": timer}, FakeClock(), on_row=lambda r: seen.append(r))
    assert [r["variant"] for r in seen] == ["quiet", "noisy", "torch"]
    assert timed_when == [0, 1, 2]  # each variant timed after the previous row was handed over
    assert all(a is b for a, b in zip(seen, rows.values()))
    assert seen[0]["status"] == "ok" and seen[0]["median_us"] == pytest.approx(10.0)


def test_a_torch_that_bumps_one_tensor_at_a_time_still_rotates(monkeypatch):
    bumped = []

    def one_at_a_time(t):
        if not isinstance(t, torch.Tensor):
            raise TypeError("expected a Tensor")
        bumped.append(t)

    monkeypatch.setattr(torch.autograd.graph, "increment_version", one_at_a_time)
    a, b, c = torch.zeros(2), torch.zeros(2), torch.zeros(2)
    timed = TimedCall([lambda: a, lambda: c], [[a, b], [c]])
    for _ in range(3):
        timed()
    assert [id(t) for t in bumped] == [id(a), id(b), id(c), id(a), id(b)]


def test_the_comparison_shapes_are_timed_before_the_roofline_shapes_whatever_the_spec_order():
    clock, log = FakeClock(), []
    spec = make_spec()
    spec.SHAPES = [dict(name="64", role="roofline", n=64), dict(name="32", role="comparison", n=32)]
    rows = runner.run_op(
        "sampling_test",
        spec,
        None,
        None,
        dtypes=["fp32"],
        timers={"graph": fake_round_timer(clock, draw, log)},
        ceilings={"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0},
        device="cpu",
        warm_calls=1,
        clock=clock,
        shapes="all",
    )
    shapes = [r["shape"] for r in rows]
    assert shapes == sorted(shapes, key=lambda s: s != "32") and set(shapes) == {"32", "64"}


def test_a_shorter_cap_bounds_every_measurement_of_a_noisy_row():
    clock, log = FakeClock(), []
    rows = bench({"graph": fake_round_timer(clock, draw, log, cap_s=0.3)}, clock)
    noisy = rows["noisy"]
    assert noisy["converged"] is False and noisy["rounds"] == 1  # a second 0.25 s round would pass 0.3 s
    assert rows["quiet"]["converged"] is True


def test_make_timers_takes_the_cap_it_is_given():
    from checks.benchmark import timing

    timers, said = timing.make_timers("both", "warm", quick=False, cap_s=0.3)
    assert {t.cap_s for t in timers.values()} == {0.3} and "or 0.3 s per measurement" in said
    timers, _ = timing.make_timers("graph", "warm", quick=True)
    assert timers["graph"].cap_s == 0.5


def test_the_garbage_collector_is_paused_while_a_row_is_timed_and_put_back_after():
    import gc

    clock, seen = FakeClock(), []

    def sampler(fn):
        def next_round():
            seen.append(gc.isenabled())
            clock.t += 0.1
            return [0.01] * 10

        return next_round

    assert gc.isenabled()
    measuring.measure(RoundTimer(sampler, 0.01, 1.0), lambda: None, clock)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:  # a caller that had it off keeps it off
        measuring.measure(RoundTimer(sampler, 0.01, 1.0), lambda: None, clock)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_row_colder_than_its_label_is_also_timed_on_one_input_set():
    clock, log = FakeClock(), []
    timers = {"graph": fake_round_timer(clock, draw, log)}
    rows = bench(timers, clock, l2_bytes=1)  # every working set passes a 1-byte L2
    quiet = rows["quiet"]
    assert quiet["colder_than_label"] is True
    assert quiet["one_set_device_us"] == pytest.approx(10.0, rel=0.01)
    rows = bench(timers, clock, l2_bytes=10**9)
    assert rows["quiet"]["colder_than_label"] is False and rows["quiet"]["one_set_device_us"] is None


def test_one_set_time_needs_a_device_timer_and_a_second_set():
    clock = FakeClock()
    timed = TimedCall([lambda: None, lambda: None], [(), ()])
    assert measuring.one_set_device_us({}, timed, clock) is None
    timer = RoundTimer(lambda fn: lambda: [0.002] * 10, 0.01, 1.0)
    assert measuring.one_set_device_us({"graph": timer}, TimedCall([lambda: None], [()]), clock) is None
    assert measuring.one_set_device_us({"graph": timer}, timed, clock) == pytest.approx(2.0)
