"""A schedule's row as the dict the request plane and the API see: read by
the schedules' own calls (store.py) and by their deliveries (deliveries.py),
which store.py composes, so it lives apart from both."""
import json


def schedule_of(row):
    d = {"device_id": row["device_id"], "alarm_id": row["alarm_id"]}
    if row["at"] is not None:
        d["at"] = row["at"]
    if row["time"] is not None:
        d["time"] = row["time"]
    if row["days"] is not None:
        d["days"] = json.loads(row["days"])
    d.update(pending_task=json.loads(row["pending_task"]), created_at=row["created_at"],
             updated_at=row["updated_at"], state=row["state"], last_req_id=row["last_req_id"],
             revision=row["revision"])
    if row["missed"]:
        d["missed"] = json.loads(row["missed"])   # the last occurrence the board skipped
    return d
