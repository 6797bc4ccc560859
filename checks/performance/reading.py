"""The performance reading of one call: what its recorded accesses and its sm_90 compile
say about its speed on an H200, the biggest loss first.

A simple cost model turns the evidence into time: the bytes the problem needs at the
card's copy bandwidth, plus what each re-read and each badly coalesced request adds, or
the FLOPs at the rate of the units that run them (tensor cores only when ``tl.dot``
became mma/wgmma), whichever is longer; times the idle share of the SMs when too few
programs run, times what spilled registers add.  Each finding's loss is the predicted time
with it less the time without it; the biggest loss is said first, with its evidence.
The model orders variants, it does not promise microseconds.

A kernel that does not compile for sm_90 has no predicted time: its reading is the
compiler's words (``compile_errors``), nothing else.  Without compile facts (the compile
child could not answer) the reading says so and claims nothing the compile would tell
(registers, spills, tensor cores).

Standard library only (the records and facts are passed in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

SMS = 132  # H200
COPY_BYTES_PER_S = 4.0e12  # H200 HBM3e, what a copy reaches
TENSOR_FLOPS = 790e12  # bf16/fp16 dense on the tensor cores
CUDA_CORE_FLOPS = 60e12  # fp32 fused multiply-adds on the CUDA cores
L2_BYTES = 50 * 2**20
L2_COST = 0.35  # a byte re-read from L2 against one from HBM
PROGRAMS_TO_FILL_MEMORY = SMS // 2  # a memory-bound kernel saturates HBM from about half the SMs
SPILL_BYTES_DOUBLING = 1024  # spilled bytes per thread that (by this model) double the time
LOSS_WORTH_SAYING = 0.2  # share of the predicted time


@dataclass
class Finding:
    cause: str  # a short id: "reread", "sectors", "programs", "no-tensor-cores", "spills", "writes"
    sentence: str
    loss_s: float = 0.0


@dataclass
class Reading:
    variant: str
    predicted_s: float
    ideal_s: float
    min_bytes: int
    moved_bytes: int
    programs: int
    findings: list = field(default_factory=list)  # biggest loss first
    details: list = field(default_factory=list)  # facts that cost nothing worth saying
    traffic: str = ""
    headline: str = ""
    compile_errors: list = field(default_factory=list)  # [(kernel, the compiler's words)]
    no_facts: str = ""  # why the compile facts are missing ("" when every launch has them)
    sampled: str = ""  # the sentence of a sampled recording ("" when every program ran)

    @property
    def compiles(self) -> bool:
        return not self.compile_errors

    def causes(self) -> list:
        return [f.cause for f in self.findings if f.loss_s >= LOSS_WORTH_SAYING * self.predicted_s]

    def lines(self) -> list:
        if self.compile_errors:
            return [self.headline]
        said = [
            f.sentence
            for f in self.findings[1:]
            if f.loss_s >= 0.05 * self.predicted_s and f.sentence not in self.traffic
        ]
        return [self.headline, self.traffic] + said + self.details + [self.sampled]

    def predicted_text(self) -> str:
        """'predicted 12.3 us on an H200 (ideal 8.0 us)', or why there is no prediction."""
        if self.compile_errors:
            return "no predicted time: a kernel does not compile for sm_90"
        return f"predicted {_us(self.predicted_s)} on an H200 (ideal {_us(self.ideal_s)})"

    def as_dict(self) -> dict:
        return {
            "variant": self.variant,
            "predicted_us": None if self.compile_errors else round(self.predicted_s * 1e6, 3),
            "ideal_us": round(self.ideal_s * 1e6, 3),
            "compile_errors": [{"kernel": k, "error": e} for k, e in self.compile_errors],
            "no_facts": self.no_facts,
            "sampled": self.sampled,
            "min_bytes": self.min_bytes,
            "moved_bytes": self.moved_bytes,
            "programs": self.programs,
            "causes": self.causes(),
            "headline": self.headline,
            "traffic": self.traffic,
            "findings": [
                {"cause": f.cause, "sentence": f.sentence, "loss_us": round(f.loss_s * 1e6, 3)}
                for f in self.findings
            ],
            "details": self.details,
        }


def _label(name: str) -> str:
    return name[:-4] if name.endswith("_ptr") else name


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} us" if us < 1000 else f"{us:,.0f} us"


def _size(n: float) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} bytes"


@dataclass
class _Tensor:
    label: str
    size: int
    loaded: int = 0
    stored: int = 0
    requests: int = 0
    sectors: int = 0
    ideal: int = 0
    program_bytes: int = 0
    program_unique: int = 0
    lane_step: int = 0
    elem: int = 0
    footprint: int = 0  # distinct bytes of one sampled program
    kernels: set = field(default_factory=set)  # the kernels that load it


def _tensors(records: list) -> dict:
    """Streams folded per tensor (by address: kernels name one tensor differently)."""
    out: dict = {}
    for rec in records:
        for (tname, kind), st in rec.streams.items():
            if tname not in rec.tensors:
                continue
            start, _, size = rec.tensors[tname]
            t = out.setdefault(start, _Tensor(_label(tname), size))
            if kind == "load":
                t.kernels.add(rec.name)
                t.loaded += st.bytes
                t.program_bytes += st.program_bytes
                t.program_unique += st.program_unique
                t.footprint = max(t.footprint, st.program_unique // max(len(st.programs_seen), 1))
            else:
                t.stored += st.bytes
            t.requests += st.requests
            t.sectors += st.sectors
            t.ideal += st.ideal_sectors
            if not t.lane_step and st.sectors > st.ideal_sectors:
                t.lane_step, t.elem = st.lane_step, st.elem
    return out


def _not_compiled(variant: str, records: list, errors: list, work: dict) -> Reading:
    """The reading of a call whose kernels do not all compile: the compiler's words."""
    min_bytes = int(work.get("bytes") or 0)
    moved = sum(st.bytes for rec in records for st in rec.streams.values())
    programs = max((rec.programs for rec in records), default=0)
    reading = Reading(variant, 0.0, max(min_bytes, 1) / COPY_BYTES_PER_S, min_bytes, moved, programs)
    reading.compile_errors = list(errors)
    reading.headline = "does not compile for the H200 (sm_90), so nothing about its speed can be read: " + (
        "; ".join(f"{kernel}: {words}" for kernel, words in errors)
    )
    return reading


def read(variant: str, records: list, facts: list, work: dict, sampled: str = "") -> Reading:
    """The reading of one call from its launches' records and compile facts (``sampled``:
    the sentence of a sampled recording)."""
    errors = []
    for rec, f in zip(records, facts):
        if f and f.get("compile_error") and (rec.name, f["compile_error"]) not in errors:
            errors.append((rec.name, f["compile_error"]))
    if errors:
        return _not_compiled(variant, records, errors, work)
    missing = [f.get("error") if f else "the kernel is not a module-level function of a file" for f in facts]
    no_facts = next((why for why in missing if why), "")
    tensors = _tensors(records)
    min_bytes = int(work.get("bytes") or 0)
    flops = float(work.get("flops") or 0)
    moved = sum(st.bytes for rec in records for st in rec.streams.values())
    programs = max((rec.programs for rec in records), default=0)
    named = {rec.name: f for rec, f in zip(records, facts) if f and not f.get("error")}
    compiled = list(named.values())
    dot = any(f.get("dot") for f in compiled)
    tensor_cores = any(f.get("tensor_cores") for f in compiled)
    spiller: dict = max(compiled, key=lambda f: f.get("spill_bytes") or 0, default={})
    spill, regs = spiller.get("spill_bytes") or 0, spiller.get("n_regs") or 0

    extras: list = []  # (finding, extra bytes)
    rereads: dict = {}  # why -> [(label, times, extra bytes)]
    for t in tensors.values():
        if (t.loaded + t.stored) < 0.05 * min_bytes:
            continue  # a little scratch: nothing here is worth a sentence
        if t.loaded >= 1.5 * t.size and t.size:
            same_program = t.program_unique and t.program_bytes >= 1.5 * t.program_unique
            from_l2 = same_program and t.footprint * min(programs, 2 * SMS) <= L2_BYTES
            shared_in_l2 = not same_program and len(t.kernels) == 1 and t.size <= L2_BYTES // 2
            if same_program:
                again = t.program_bytes / t.program_unique
                why = f"each program loads its part {again:.1f} times: a second pass reloads it"
                if from_l2:
                    flight = t.footprint * min(programs, 2 * SMS)
                    why += f" (from L2: {_size(t.footprint)} per program, {_size(flight)} in flight)"
            elif len(t.kernels) > 1:
                kernels = ", ".join(sorted(t.kernels))
                why = f"{len(t.kernels)} kernels load them ({kernels}): the second pass reloads them"
            else:
                why = "different programs load the same elements: each output tile re-reads its inputs"
                if shared_in_l2:
                    why += " (from L2, which holds them; wider tiles re-read less)"
            extra = (t.loaded - t.size) * (L2_COST if from_l2 or shared_in_l2 else 1.0)
            rereads.setdefault(why, []).append((t.label, t.loaded / t.size, extra))
        if t.stored >= 1.5 * t.size and t.size:
            extras.append(
                (Finding("writes", f"writes {t.label} {t.stored / t.size:.1f} times"), t.stored - t.size)
            )
        if t.requests and t.sectors >= 1.5 * t.ideal:
            per, ideal = t.sectors / t.requests, t.ideal / t.requests
            sentence = (
                f"accesses to {t.label} touch {per:.0f} sectors of 32 bytes per warp-wide request, "
                f"{ideal:.0f} is ideal: neighbouring lanes are {t.lane_step} bytes apart "
                f"(consecutive lanes step along a strided dimension of memory, so each lands in its own "
                f"sector); make the contiguous index the fastest-moving one"
            )
            extras.append((Finding("sectors", sentence), (t.loaded + t.stored) * (per / ideal - 1)))
    for why, group in rereads.items():
        names = " and ".join(f"{label} {times:.1f} times" for label, times, _ in group)
        extras.append((Finding("reread", f"reads {names}: {why}"), sum(e for *_, e in group)))
    scratch = sum(
        st.bytes
        for rec in records
        for (n, _), st in rec.streams.items()
        if n not in rec.tensors or rec.tensors[n][0] not in tensors
    )

    def memory_s(skip: Optional[Finding] = None) -> float:
        extra = sum(b for f, b in extras if f is not skip)
        return (max(min_bytes, 1) + extra + scratch) / COPY_BYTES_PER_S

    rate = TENSOR_FLOPS if tensor_cores else CUDA_CORE_FLOPS
    needed = PROGRAMS_TO_FILL_MEMORY if flops / max(min_bytes, 1) < 50 else SMS

    def total(
        skip: Optional[Finding] = None, fast_math: bool = False, full: bool = False, no_spill: bool = False
    ) -> float:
        core = max(memory_s(skip), flops / (TENSOR_FLOPS if fast_math else rate))
        fill = 1.0 if full or not programs else max(1.0, needed / programs)
        spill_factor = 1.0 if no_spill or not spill else 1.0 + min(2.0, spill / SPILL_BYTES_DOUBLING)
        return core * fill * spill_factor

    predicted = total()
    findings = [Finding(f.cause, f.sentence, predicted - total(skip=f)) for f, _ in extras]
    if flops and not tensor_cores and not no_facts and flops / max(min_bytes, 1) >= 10:
        why = "the kernel has no tl.dot" if not dot else "its tl.dot did not become mma/wgmma"
        findings.append(
            Finding(
                "no-tensor-cores",
                f"the products run on the CUDA cores, not the tensor cores: {why} "
                f"({flops / 1e9:.2f} GFLOP at {CUDA_CORE_FLOPS / 1e12:.0f} TFLOP/s instead of "
                f"{TENSOR_FLOPS / 1e12:.0f})",
                predicted - total(fast_math=True),
            )
        )
    if programs and programs < needed:
        per = moved / programs
        findings.append(
            Finding(
                "programs",
                f"{programs} programs for {SMS} SMs: most of the GPU idles while each program "
                f"moves {_size(per)}; split the work into more, smaller programs",
                predicted - total(full=True),
            )
        )
    if spill:
        findings.append(
            Finding(
                "spills",
                f"spills registers to local memory: ptxas reports {spiller.get('spill_stores', spill)} "
                f"bytes of spill stores and {spiller.get('spill_loads', 0)} of spill loads, a "
                f"{spiller.get('stack_bytes', 0)}-byte stack frame per thread ({regs} registers): "
                f"the tiles held in registers are too large; use smaller blocks or more warps",
                predicted - total(no_spill=True),
            )
        )
    findings.sort(key=lambda f: -f.loss_s)
    ideal = max(min_bytes, 1) / COPY_BYTES_PER_S
    if flops:
        ideal = max(ideal, flops / TENSOR_FLOPS)
    reading = Reading(variant, predicted, ideal, min_bytes, moved, programs, findings)
    reading.no_facts, reading.sampled = no_facts, sampled
    top = findings[0] if findings else None
    if top is not None and top.loss_s >= LOSS_WORTH_SAYING * predicted:
        reading.headline = (
            f"biggest loss ({top.loss_s / predicted:.0%} of the predicted time): {top.sentence}"
        )
    else:
        compute_bound = flops / TENSOR_FLOPS > max(min_bytes, 1) / COPY_BYTES_PER_S
        reading.headline = (
            f"no large loss: predicted within {predicted / ideal:.1f}x of the ideal "
            f"({'FLOP' if compute_bound else 'copy'} ceiling)"
        )
    ratio = moved / min_bytes if min_bytes else 0.0
    if ratio <= 1.1:
        reading.traffic = f"moves each byte once ({_size(moved)}, the minimum the problem needs)"
        if any(f.cause == "sectors" for f in findings):  # elements once, sectors many times
            reading.traffic += ", though in whole 32-byte sectors it fetches more (see the sectors above)"
    else:
        said = [f.sentence for f in findings if f.cause in ("reread", "writes")]
        why = said[0] if said else f"{_size(scratch)} of scratch"
        reading.traffic = f"moves {ratio:.1f}x the minimum ({_size(moved)} for {_size(min_bytes)})"
        if why not in reading.headline:
            reading.traffic += f": {why}"
    for name, f in named.items():
        reading.details.append(
            f"{name}: {f.get('n_regs')} registers per thread, "
            f"{f.get('spill_bytes', 0)} bytes of spill stores and loads, "
            f"{_size(f.get('shared_bytes') or 0)} shared memory, {f.get('num_warps')} warps"
            + (", tl.dot on tensor cores" if f.get("tensor_cores") else "")
        )
    if no_facts:
        reading.details.append(f"{no_facts} (registers, spills and tensor cores not read)")
    reading.details.append(f"{programs} programs for {SMS} SMs")
    return reading
