"""Delete expired sessions."""
import os
import time

SESSION_DIR = os.environ.get("SESSION_DIR", "/tmp/sessions")


def expired(path, max_age=86400):
    return time.time() - os.path.getmtime(path) > max_age


def cleanup():
    removed = 0
    for name in os.listdir(SESSION_DIR):
        path = os.path.join(SESSION_DIR, name)
        if expired(path):
            os.remove(path)
            removed += 1
    return removed
