"""User-facing errors: one line that names the problem and the fix."""


class UserError(Exception):
    """A problem the user can fix; the CLI prints it without a traceback."""


class NoGPUError(UserError):
    """Raised where a real GPU is required and none (or the simulator) is present."""
