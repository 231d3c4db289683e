"""A throwaway PostgreSQL server for the session tests, as the Rust tests start theirs
(crates/curator-testkit/src/postgres.rs): ``initdb`` into a temporary folder and ``pg_ctl``
on a free loopback port, as the ``postgres`` user (or ``nobody``) when running as root.

Without the server binaries the tests that need one are skipped with the reason printed,
unless ``CI`` is ``true`` (or ``1``): then they fail, as a skipped test checks nothing.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile

import pytest


def _binaries():
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return os.path.dirname(found)
    for bin_dir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.isfile(os.path.join(bin_dir, "pg_ctl")) and os.path.isfile(os.path.join(bin_dir, "initdb")):
            return bin_dir
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as():
    if os.geteuid() != 0:
        return None
    for user in ("postgres", "nobody"):
        if subprocess.run(["id", "-u", user], capture_output=True).returncode == 0:
            return user
    return None


class PgServer:
    def __init__(self, bin_dir):
        self.bin = bin_dir
        self.user = _run_as()
        self.dir = tempfile.mkdtemp(prefix="curator-py-pg-")
        os.chmod(self.dir, 0o755)
        if self.user:
            subprocess.run(["chown", self.user, self.dir], check=True)
        self.data = os.path.join(self.dir, "data")
        self._run(["initdb", "-D", self.data, "-U", "curator", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"])
        last = ""
        for _ in range(5):
            self.port = _free_port()
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.data} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            done = self._run(
                ["pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60", "-o", options, "start"],
                check=False,
            )
            if done.returncode == 0:
                return
            last = done.stdout + done.stderr
        raise RuntimeError(f"the PostgreSQL server did not start: {last}")

    def _run(self, args, check=True):
        program = [os.path.join(self.bin, args[0])] + args[1:]
        if self.user:
            program = ["runuser", "-u", self.user, "--"] + program
        done = subprocess.run(program, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}")
        return done

    def url(self, database="postgres"):
        return f"postgres://curator@127.0.0.1:{self.port}/{database}"

    def stop(self):
        self._run(["pg_ctl", "-D", self.data, "stop", "-m", "immediate", "-w"], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL URL on a server started for this test run."""
    bin_dir = _binaries()
    if bin_dir is None:
        reason = "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin"
        if os.environ.get("CI") in ("true", "1"):
            pytest.fail(f"{reason}, and CI is set: the PostgreSQL tests must not pass by skipping")
        print(f"skipping: {reason}")
        pytest.skip(reason)
    server = PgServer(bin_dir)
    try:
        yield server.url()
    finally:
        server.stop()
