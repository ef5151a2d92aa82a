"""The API's routers, one per resource, mounted under /api by ``cow006_platform.app``."""
