//! Permission checks (filled by the cred work).
