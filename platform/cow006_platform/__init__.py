"""The arena's platform service: HTTP API, data layer, ratings and web pages.

Not built yet: it arrives with the platform issue.  The package exists so the root project
installs all three packages and nothing can claim the name ``platform``.
"""
