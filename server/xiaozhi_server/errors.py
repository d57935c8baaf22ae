"""Errors of the control plane, each with the HTTP status the API answers with.

The code is a short stable word a parents' app can branch on; the message
is for a person and names the field or the thing that is wrong."""


class ControlError(Exception):
    status = 500
    code = "server_error"

    def __init__(self, message, extra=None):
        super().__init__(message)
        self.message = message
        # More to show beside the error (e.g. the schedule that was stored anyway).
        self.extra = extra or {}


class BadRequest(ControlError):
    status = 400
    code = "invalid_request"


class Unauthorized(ControlError):
    status = 401
    code = "unauthorized"


class Forbidden(ControlError):
    """Authenticated, but the request may not be made this way (the
    console's cookie without its header, a request from another site)."""
    status = 403
    code = "forbidden"


class NotFound(ControlError):
    status = 404
    code = "not_found"


class Conflict(ControlError):
    status = 409
    code = "conflict"


class PreconditionFailed(ControlError):
    status = 412
    code = "precondition_failed"


class DeviceBusy(ControlError):
    """Too many requests to one device wait for its acks: try again later."""
    status = 429
    code = "device_busy"

    def __init__(self, message, retry_after_s=5):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BrokerUnavailable(ControlError):
    status = 503
    code = "broker_unavailable"


class StoreUnavailable(ControlError):
    """The control database cannot be reached (or the connection broke during
    the call: its outcome is unknown). The next call connects again."""
    status = 503
    code = "store_unavailable"
