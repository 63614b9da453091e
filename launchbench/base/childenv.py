"""What the code under test may see of launchbench's environment: no tokens, no credentials.

history, bisect, pr and ``--repo`` build and run code launchbench did not write (its setup.py at
build time, its package in every worker); a CI job's tokens or a workstation's cloud keys in the
caller's environment would be that code's to read and send anywhere. So every build step (venv,
pip) and every worker gets the caller's environment less each variable whose name looks like a
credential (``is_secret``), unless ``--pass-env NAME`` asks for it; the documents record the names
withheld and passed, never a value. Pip's own configuration (``PIP_*``) and proxies pass: a build
needs them. Import-light.
"""
from __future__ import annotations

import fnmatch
import os
import re
import threading

#: Names (upper-cased, shell patterns) of variables a child does not get unless passed by name.
SECRET_PATTERNS = (
    "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*PRIVATE*",
    "*_KEY", "*_KEY_*", "*_KEYS", "*APIKEY*", "*ACCESSKEY*",
    "AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_*", "CLOUDSDK_*",
    "ACTIONS_*",            # GitHub Actions' runtime and OIDC token request URL and token
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "GNUPGHOME", "NETRC", "KUBECONFIG", "DOCKER_AUTH_CONFIG",
    "VAULT_*", "TWINE_*",
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_lock = threading.Lock()
_passed: frozenset = frozenset()  # names --pass-env asked for (this invocation's; cli.main sets it)


def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def is_name(text: str) -> bool:
    """An environment variable's name as ``--pass-env`` takes it (never NAME=VALUE)."""
    return bool(_NAME.fullmatch(text or ""))


def set_passed(names) -> None:
    """The names this invocation passes to its children although they look like credentials."""
    global _passed
    with _lock:
        _passed = frozenset(names or ())


def passed() -> frozenset:
    with _lock:
        return _passed


def scrub(env: dict, allow=None) -> dict:
    """A copy of *env* without the credential-like variables, except those in *allow* (default: the
    names ``set_passed`` gave)."""
    allow = passed() if allow is None else frozenset(allow)
    return {k: v for k, v in env.items() if k in allow or not is_secret(k)}


def child_environ(allow=None) -> dict:
    """This process's environment as a child that runs code under test gets it."""
    return scrub(dict(os.environ), allow)


def record(environ=None, allow=None) -> dict:
    """For the documents: names only, sorted -- those withheld from children and those passed."""
    environ = os.environ if environ is None else environ
    allow = passed() if allow is None else frozenset(allow)
    secret = sorted(k for k in environ if is_secret(k))
    return {"withheld": [k for k in secret if k not in allow], "passed": sorted(k for k in allow if k in environ)}
