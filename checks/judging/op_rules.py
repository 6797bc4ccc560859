"""What the witness (checks.judging.provenance) allows a learner's function to run
outside its kernels, and how it names what it does not allow.

Standard library only.
"""

from __future__ import annotations

# aten op names (overload packets) that move no values through arithmetic.
ALLOWED_OPS = frozenset(
    {
        # allocation and initialisation
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "zero_",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill_",
        "scalar_tensor",
        "resize_",
        "set_",
        "record_stream",
        # views and metadata
        "view",
        "_unsafe_view",
        "reshape",
        "as_strided",
        "alias",
        "detach",
        "t",
        "transpose",
        "permute",
        "expand",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "unfold",
        "movedim",
        "view_as",
        "expand_as",
        "_reshape_alias",
        "diagonal",
        "unflatten",
        "flatten",
        # layout copies (a dtype change is checked separately below)
        "clone",
        "copy_",
        "_to_copy",
        "contiguous",
        "is_same_size",
        "_has_compatible_shallow_copy_type",
    }
)
DTYPE_KEEPING = frozenset({"copy_", "_to_copy"})
# Ops whose aten name would puzzle a learner, said as they wrote them.
PLAIN_NAMES = {
    "lift_fresh": "torch.tensor(...) from Python values",
    "lift_fresh_copy": "torch.tensor(...) from Python values",
    "_local_scalar_dense": ".item() or .tolist(), reading values back to Python",
}
# Allowed ops that write a tensor's values, and Tensor methods that hand its memory to
# Python: how values reach an output without a kernel's store (named when one did).
WRITERS = frozenset({"copy_", "fill_", "zero_", "set_"})
# Of those, the ones that set elements to one constant (``torch.zeros``, ``out.fill_(0)``):
# an output initialised so and then missed by the kernels is left as allocated, not
# written another way (checks.judging.stored.left_as_allocated).
INITIALIZERS = frozenset({"aten::fill_", "aten::zero_"})
MEMORY_HANDLES = {
    "numpy": ".numpy()",
    "__array__": "np.asarray(tensor)",
    "__dlpack__": "np.from_dlpack(tensor)",
    "tolist": ".tolist()",
    "data_ptr": ".data_ptr()",
}
# Of those, the ones that hand the values themselves to NumPy: values computed on the
# host can reach an output through a kernel that only copies them.
HOST_VALUES = frozenset({".numpy()", "np.asarray(tensor)", "np.from_dlpack(tensor)", ".tolist()"})
