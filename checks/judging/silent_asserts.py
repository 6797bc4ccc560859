"""Triton's wordless assertions, in words.  Some of Triton's own checks of a kernel are bare
``assert`` statements: the interpreter and the compiler both stop with an ``AssertionError()``
that says nothing.  Which check failed is known from the Triton function it was raised in.
Standard library only."""

from __future__ import annotations

import traceback
from typing import Optional

# (the file of Triton's that raised it, the function) -> what it checks, in the lesson's words
KNOWN = {
    ("semantic.py", "dot"): (
        "tl.dot(a, b, acc) refused its accumulator: Triton requires `acc` to have the dot's result "
        "type, float32 unless out_dtype says otherwise, and the tile's shape; an accumulator created "
        "as float16 (tl.zeros(..., dtype=tl.float16)) is refused. Create it in float32 and cast once, "
        "at the store"
    ),
}


def words_for(exc: BaseException) -> Optional[str]:
    """What a wordless AssertionError in ``exc``'s chain checked, when it is one of
    :data:`KNOWN`; else None."""
    seen: set = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, AssertionError) and not str(e).strip() and e.__traceback__ is not None:
            last = traceback.extract_tb(e.__traceback__)[-1]
            for (file, function), said in KNOWN.items():
                if (
                    last.filename.replace("\\", "/").endswith(f"/triton/language/{file}")
                    and last.name == function
                ):
                    return said
        e = e.__cause__ or e.__context__
    return None
