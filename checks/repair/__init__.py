"""Find the fix: for a failing exercise, the smallest change of the learner's own code that
makes every check pass, verified by the checks before it is said.

    error_model   the candidate changes: learner mistakes as edits of the file's AST, each
                  with the sentence that names the mistake's mechanism
    search        orders the candidates, tries them (the failing checks first, then the whole
                  suite) in warm worker processes with a time limit each, then pairs
    worker        the warm process that runs a workshop's checks on one candidate file
    cli           ``python -m checks.repair WORKSHOP --file PATH``

The learner's file is never written: candidates are copies in a temporary folder.
"""

import os

STANDBY_CORES = 8  # from this many cores, a GPU workshop's search starts with its run


def standby_wanted(gpu_workshop: bool) -> bool:
    """Whether the search of a run starts with the run and waits for its verdict
    (``--records-from-stdin``), its workers warming while the checks run: for a GPU workshop
    on a machine of STANDBY_CORES cores or more, where the workers' start (torch, a CUDA
    context each) takes cores the run does not need.  KERNEL_COURSE_REPAIR_STANDBY=1 or 0
    decides instead.  The app and the repair report follow it alike."""
    chosen = os.environ.get("KERNEL_COURSE_REPAIR_STANDBY", "")
    if chosen in ("0", "1"):
        return chosen == "1"
    return gpu_workshop and (os.cpu_count() or 1) >= STANDBY_CORES
