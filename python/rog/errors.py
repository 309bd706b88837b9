"""Errors of the ROG SDK: one class per gRPC (absl) status code.

Every error the SDK or rogd reports is a :class:`Error`, of the subclass
named after its code, carrying rogd's or the SDK's message unchanged::

    try:
        team = rog.connect("ps-robot:7070", model, worker_id="robot1")
    except rog.FailedPrecondition as e:   # a model other than rogd's
        print(e.code, e.message)
"""

__all__ = [
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
]


class Error(Exception):
    """An error of the ROG SDK or of rogd: `code` (the gRPC status code, an
    int), `code_name` (e.g. "FAILED_PRECONDITION") and `message`."""

    code = 2
    code_name = "UNKNOWN"

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self):
        return f"{self.code_name}: {self.message}"


def _subclass(name, code, code_name, doc):
    return type(name, (Error,), {"code": code, "code_name": code_name, "__doc__": doc})


Cancelled = _subclass("Cancelled", 1, "CANCELLED", "The call was cancelled (closing).")
Unknown = _subclass("Unknown", 2, "UNKNOWN", "An error with no better code.")
InvalidArgument = _subclass(
    "InvalidArgument", 3, "INVALID_ARGUMENT",
    "A bad option or value, or a message rogd refused (retrying cannot help).")
DeadlineExceeded = _subclass(
    "DeadlineExceeded", 4, "DEADLINE_EXCEEDED", "A wait ran past its timeout; the message says what it waited for.")
NotFound = _subclass("NotFound", 5, "NOT_FOUND", "Something named does not exist.")
AlreadyExists = _subclass("AlreadyExists", 6, "ALREADY_EXISTS", "It exists already.")
PermissionDenied = _subclass(
    "PermissionDenied", 7, "PERMISSION_DENIED", "rogd refused this token's role.")
ResourceExhausted = _subclass(
    "ResourceExhausted", 8, "RESOURCE_EXHAUSTED", "A limit of rogd's (its --max_* flags).")
FailedPrecondition = _subclass(
    "FailedPrecondition", 9, "FAILED_PRECONDITION",
    "Not now or not this: e.g. a model other than the one rogd holds.")
Aborted = _subclass("Aborted", 10, "ABORTED", "The stream was ended by rogd.")
OutOfRange = _subclass("OutOfRange", 11, "OUT_OF_RANGE", "A value out of range.")
Unimplemented = _subclass("Unimplemented", 12, "UNIMPLEMENTED", "Not implemented.")
Internal = _subclass("Internal", 13, "INTERNAL", "An internal error.")
Unavailable = _subclass(
    "Unavailable", 14, "UNAVAILABLE", "rogd cannot be reached (the SDK retries by itself).")
DataLoss = _subclass("DataLoss", 15, "DATA_LOSS", "Data was lost.")
Unauthenticated = _subclass(
    "Unauthenticated", 16, "UNAUTHENTICATED", "rogd wants a (different) worker token.")

_BY_CODE = {c.code: c for c in (
    Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
    PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented,
    Internal, Unavailable, DataLoss, Unauthenticated)}


def _from_status(code, message):
    """The exception for a status (the native module raises these)."""
    cls = _BY_CODE.get(code, Unknown)
    return cls(message, code if cls is Unknown else None)
