"""The package imports as itself (not the C++ sources' folder) and maps errors."""

from __future__ import annotations

import spool
import spool.errors


def test_imports_the_built_package() -> None:
    assert spool.__version__
    assert spool.__file__ is not None and spool.__file__.endswith("__init__.py")


def test_status_codes_map_to_builtin_exceptions() -> None:
    error = spool.errors._from_status("NotFound", "NotFound: s3://b/k does not exist")
    assert isinstance(error, spool.NotFoundError)
    assert isinstance(error, FileNotFoundError)
    assert isinstance(error, spool.Error)
    assert error.code == "NotFound"
    assert isinstance(spool.errors._from_status("InvalidArgument", "x"), ValueError)
    assert isinstance(spool.errors._from_status("PermissionDenied", "x"), PermissionError)
    unauthenticated = spool.errors._from_status("Unauthenticated", "no AWS credentials found")
    assert isinstance(unauthenticated, spool.UnauthenticatedError)
    assert isinstance(unauthenticated, spool.PermissionDeniedError)
    assert isinstance(unauthenticated, PermissionError)
    assert not isinstance(unauthenticated, FileNotFoundError)
    assert type(spool.errors._from_status("SomethingNew", "x")) is spool.Error


def test_engine_modules_say_what_to_install_without_their_engine() -> None:
    import subprocess
    import sys

    for module, engine, extra in (("spool.spark", "pyspark", "spool[spark]"), ("spool.ray", "ray", "spool[ray]")):
        # sys.modules[name] = None makes `import name` fail, as when it is not installed.
        code = (f"import sys; sys.modules[{engine!r}] = None; import spool\n"
                f"try:\n    import {module}\nexcept ImportError as e:\n    print(e)\n")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert f"pip install '{extra}'" in result.stdout, result.stdout + result.stderr
