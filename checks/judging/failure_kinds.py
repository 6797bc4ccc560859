"""Why a failure matters, by what kind of failure it is rather than by the check that saw it.

A check's own ``why`` explains the arithmetic it guards.  Some failures say something else,
whichever check they happen in: another computation's values were returned (not the
learner's kernel), an access fell outside every tensor, elements were stored by no
program.  Their ``details["verdict"]`` names the kind, and the record then explains that
kind instead of the check's arithmetic.  Standard library only.
"""

from __future__ import annotations

from typing import Optional

# The kinds, as a failure's ``details["verdict"]`` names them.
NOT_OWN_KERNEL = "not-own-kernel"  # another computation's values were returned
OUT_OF_BOUNDS = "out-of-bounds"  # an access outside every tensor of the launch
UNWRITTEN = "unwritten"  # elements no program stored, and nothing else wrote
NO_LAUNCH = "no-launch"  # nothing launched, nothing computed: no one else's work either

SECTION_OWN = "Your kernel, not PyTorch"

OWN_KERNEL_WHY = (
    "a numeric check only says the answer is right; this one says your @triton.jit "
    "kernel computed it: a PyTorch expression (torch.softmax, @, +, a dtype cast) or "
    "a kernel imported from another file in place of your kernel fails here, named "
    "with the op and the line of your file"
)

NOT_OWN_WHY = (
    "the values this call returned were not computed by a @triton.jit kernel of your file: "
    "a PyTorch op (a dtype cast such as .float() included), NumPy, or a kernel from another "
    "file did the work. The message names the op and the line; move that work into your kernel"
)

OUT_OF_BOUNDS_WHY = (
    "a load or store outside every tensor the launch was given reads or overwrites memory "
    "that is not the kernel's: on a GPU it returns garbage or faults near a page boundary, "
    "so a right answer here would be luck. Fix what the message points at: the offset "
    "arithmetic, or a mask for lanes that can run past the end (mask=..., other=...)"
)

UNWRITTEN_WHY = (
    "elements that no program stored hold whatever the allocation held: the grid launched "
    "too few programs for the shape, a mask stops early, or a store uses the wrong strides. "
    "Compare the grid the message names with the one the shape needs"
)

NO_LAUNCH_WHY = (
    "the call returned without launching any kernel, so nothing computed its result: an early "
    "return (a size or empty-input check) or a condition before the launch was taken for a "
    "shape that has elements. Compare the conditions before your launch with this call's shapes"
)

ERROR_WHY = (
    "your code raised an error before the check could judge its answer, so this says nothing yet "
    "about what the check verifies: the message names the error and the line it was raised at"
)

# A check about whose kernel ran (own-kernel) that meets a fault of another kind reports
# that kind: its label says what failed, not a charge that another computation did the work.
OUT_OF_BOUNDS_LABEL = "your kernel's loads and stores stay inside the tensors passed to its launch"

ADDRESSES = "addresses"  # the lesson's section on addresses, found by its heading

# verdict -> (why, lesson section: ADDRESSES, or None to keep the check's own)
KINDS = {
    NOT_OWN_KERNEL: (NOT_OWN_WHY, SECTION_OWN),
    OUT_OF_BOUNDS: (OUT_OF_BOUNDS_WHY, ADDRESSES),
    UNWRITTEN: (UNWRITTEN_WHY, ADDRESSES),
    NO_LAUNCH: (NO_LAUNCH_WHY, None),
}
LABELS = {OUT_OF_BOUNDS: OUT_OF_BOUNDS_LABEL}  # verdict -> its label in own-kernel


# the lesson's section on where lanes read and write, by the words of its heading
ADDRESS_WORDS = ("address", "owns", "ownership", "mask")


def addresses_section(headings: list, mask_first: bool = False) -> Optional[str]:
    """The first of the lesson's ``headings`` about addresses, tile ownership or masks (one
    about masks first, with ``mask_first``: the advice is the mask)."""
    if mask_first and (about_masks := next((h for h in headings if "mask" in h.lower()), None)):
        return about_masks
    return next((h for h in headings if any(w in h.lower() for w in ADDRESS_WORDS)), None)


def explained(record, headings: Optional[list] = None) -> None:
    """Give a ``record`` the why, section (and, in own-kernel, label) of its fault rather
    than its check's.  An error is not the check's verdict: no check's why nor section.
    A failure of a known kind gets that kind's why (or its cause's); an access out of
    bounds or elements never stored point to the lesson's section on addresses (from
    ``headings``) unless the check's own section is about addresses or masks, as does no
    launch met by the check of whose kernel ran (its section is about PyTorch doing the work)."""
    if record.status == "error":
        record.why, record.section = ERROR_WHY, ""
        return
    kind = KINDS.get(record.details.get("verdict", "")) if isinstance(record.details, dict) else None
    if record.status != "fail" or kind is None:
        return
    why, section = kind
    cause = record.details.get("cause")  # the pattern the evidence shows: its why, not the kind's
    record.why = cause["why"] if isinstance(cause, dict) and cause.get("why") else why
    own_check = record.section == SECTION_OWN
    if section == ADDRESSES and addresses_section([record.section]):
        section = None  # the check's own section is about addresses or masks already
    elif section == ADDRESSES or (section is None and own_check):
        message = record.message
        masks = "mask this access" in message or (
            "the access is masked" in message and "owns no elements" not in message  # else the grid
        )
        section = addresses_section(headings or [], mask_first=masks)
    if section is not None:
        record.section = section
    if own_check and record.details["verdict"] in LABELS:
        record.label = LABELS[record.details["verdict"]]
