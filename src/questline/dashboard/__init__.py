"""The browser dashboard, served by the service itself at ``/ui/``.

The pages are built from ``frontend/`` (``npm ci && npm run build``) into
``static/``, which is committed, so the service runs without Node.js.
"""

from questline.dashboard.endpoints import STATIC_DIR, mount_dashboard, router

__all__ = ["STATIC_DIR", "mount_dashboard", "router"]
