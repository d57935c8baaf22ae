"""xiaozhi-apps server: voice pipeline, App Runtime and control plane for the xiaozhi voice companion."""
