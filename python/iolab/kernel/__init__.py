"""The ``anticipatory`` and ``wpcas`` elevators of ``kernel/`` measured in a
QEMU guest (``testbed/``): the CPU cost per request (:mod:`.overhead`) and
the simulator against the kernel on an emulated disk (:mod:`.compare`).

:mod:`.testbed` finds the repository's ``kernel/`` and ``testbed/`` and
boots the guest with one of its jobs.
"""
