"""Platform settings, from COW006_* environment variables (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything an operator can set; each field is COW006_<NAME> in the environment."""

    model_config = SettingsConfigDict(env_prefix="COW006_", extra="ignore")

    # SQLite file under ./var by default; postgresql+psycopg://... in production.
    database_url: str = "sqlite:///var/cow006.db"
    # Where uploaded bots are unpacked and kept (content-addressed by sha256).
    data_dir: Path = Path("var/data")
    # Upload caps.
    max_upload_bytes: int = 1024 * 1024
    max_unpacked_bytes: int = 5 * 1024 * 1024
    max_files: int = 200
    uploads_per_day: int = 50
    challenges_per_hour: int = 30
    # Validation: the smoke match a new version plays against built-in bots.
    validation_opponents: tuple[str, ...] = ("builtin:random", "builtin:greedy", "builtin:safe")
    validation_decision: float = 1.0
    validation_bank: float = 10.0
    # "off" runs bots unsandboxed (an operator's own machine only); anything else requires it.
    sandbox: str = "on"
    # Page size of list endpoints (the maximum a client may ask for).
    max_page_size: int = 200


@lru_cache
def get_settings() -> Settings:
    return Settings()
