"""The error model: the mistakes learners make in a kernel and its wrapper, as edits of the
file's AST that would undo them.  Each candidate carries the sentence that names the
mistake's mechanism in the file's own names ("the loop never advances `b_ptrs`, so every
pass reads the same first tile"), said only after the checks pass with the edit.

    kind             the mistake it undoes
    boundary         a comparison off by one (< for <=, > for >=) or inverted (== for !=)
    arithmetic       + for -, * for /, // for /
    constant         an integer one off (a loop bound, an axis, a program_id axis), 0/1
    same-kind-name   one name for another of its kind (a_ptrs/b_ptrs, stride_am/stride_ak,
                     pid_m/pid_n, offs_m/offs_n, M/N) at one place
    exchanged-names  two names of one kind exchanged in one statement, or two definitions
    overwrite        ``acc = x`` where ``acc += x`` (or ``tl.dot(a, b, acc)``) accumulates
    pointer-advance  a pointer a loop loads through but never advances
    floor-division   ``a // b`` where a ceiling division counts a last, partial tile
    clamp            a ``min``/``max`` around a grid or a bound that the formula has not
    extra-operand    an extra factor or term
    missing-factor   a term of an address without its stride or size, a product without its scale
    padding          a masked load's ``other=`` value
    exp-base         exp for exp2 (a missing or extra log2(e))
    min-max          the minimum for the maximum
    dtype            float16 for float32 (an accumulator, a cast, an allocation)
    early-cast       a ``.to(...)`` that rounds too early
    order            two steps applied in the other order
    mask             a load or store without the mask its siblings use
    where-branches   tl.where's two results exchanged
    start-value      a running maximum started at 0 instead of -inf (or the reverse)
    extra-step       a statement applied one time too many
    grid-axes        a launch grid's two axes exchanged
    foreign-strides  one tensor's strides in another's addresses (a fresh output's row
                     stride: the row's length)
    missing-weight   a loaded tensor's factor left out of a formula (``tl.sum(g)`` for
                     ``tl.sum(y * g)``)
    exchanged-tensors  two tensors passed to a launch in the other order
    square-root      a divisor without its square root (1/d for 1/sqrt(d)), or one too many
    missing-term     an address without a term the file's other addresses have (``x_ptr + cols``
                     beside ``out_ptr + row * n_cols + cols``)
    other-value      one value the kernel computed used for another (``1.0 / row_max`` for
                     ``1.0 / denominator``)

Standard library only.
"""

from __future__ import annotations

import ast

from checks.repair.mistakes_of_flow import (
    arithmetic,
    boundary,
    clamp,
    constant,
    extra_condition,
    extra_operand,
    floor_division,
    missing_factor,
    overwrite,
    pointer_advance,
)
from checks.repair.mistakes_of_state import (
    last_group_size,
    merge_rescale,
    missing_rescale,
    tile_end,
    tile_start_for_rows,
    unused_denominator,
)
from checks.repair.mistakes_of_steps import (
    extra_step,
    grid_axes,
    inside_out,
    max_not_subtracted,
    order,
    precedence,
    square_root,
)
from checks.repair.mistakes_of_tensors import (
    exchanged_tensors,
    foreign_strides,
    mask_bound,
    missing_term,
    missing_weight,
    other_term,
)
from checks.repair.mistakes_of_values import (
    broadcast_axis,
    dtype,
    early_cast,
    exchanged_arguments,
    exchanged_names,
    exp_base,
    mask,
    min_max,
    other_value,
    padding,
    same_kind_name,
    start_value,
    where_branches,
)
from checks.repair.program import (
    Candidate,
    context_of,
    name_sentence,
    same_kind,
    sites,
    sizes_a_tile,
    tile_parameter,
)

__all__ = ["OPERATORS", "Candidate", "candidates", "name_sentence", "same_kind"]

OPERATORS: dict = {
    "boundary": boundary,
    "arithmetic": arithmetic,
    "constant": constant,
    "same-kind-name": same_kind_name,
    "exchanged-names": exchanged_names,
    "exchanged-arguments": exchanged_arguments,
    "inside-out": inside_out,
    "extra-condition": extra_condition,
    "overwrite": overwrite,
    "pointer-advance": pointer_advance,
    "floor-division": floor_division,
    "clamp": clamp,
    "extra-operand": extra_operand,
    "missing-factor": missing_factor,
    "padding": padding,
    "exp-base": exp_base,
    "min-max": min_max,
    "dtype": dtype,
    "early-cast": early_cast,
    "order": order,
    "mask": mask,
    "where-branches": where_branches,
    "start-value": start_value,
    "extra-step": extra_step,
    "grid-axes": grid_axes,
    "foreign-strides": foreign_strides,
    "missing-weight": missing_weight,
    "exchanged-tensors": exchanged_tensors,
    "square-root": square_root,
    "missing-term": missing_term,
    "mask-bound": mask_bound,
    "missing-rescale": missing_rescale,
    "unused-denominator": unused_denominator,
    "tile-end": tile_end,
    "tile-start": tile_start_for_rows,
    "last-group": last_group_size,
    "precedence": precedence,
    "merge-rescale": merge_rescale,
    "other-term": other_term,
    "other-value": other_value,
    "broadcast-axis": broadcast_axis,
    "max-not-subtracted": max_not_subtracted,
}


def candidates(source: str) -> list:
    """Every candidate change of ``source``'s top-level functions, each a valid program that
    differs from ``source``; unordered (the search orders them)."""
    tree = ast.parse(source)
    out: list = []
    for site in sites(tree):
        ctx = context_of(site, tree)
        for operator in OPERATORS.values():
            out.extend(c for c in operator(ctx) if not _sizes_a_tile_only(c, ctx))
    return out


def _sizes_a_tile_only(c: Candidate, ctx) -> bool:
    """Every edit of ``c`` is in a tile size's own statement: a larger tile (a cap or a
    divisor dropped, min for max, another constant) lets one tile hold a whole test and
    hides the fault it was to fix, so none is proposed there.  A launch passing one size
    for another (``BLOCK_N=block_m``) is still undone."""
    return all(sizes_a_tile(e.node, ctx) and not tile_parameter(e.node, ctx) for e in c.edits)
