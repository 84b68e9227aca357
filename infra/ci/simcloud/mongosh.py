"""A minimal `mongosh` for simulated droplets (the real one comes with MongoDB's packages). It
really executes what it is given, through a real driver (pymongo), but understands only the
statements the configuration step uses, and refuses anything else loudly:

    [printjson(]TARGET.runCommand(JSON)[.FIELD][)][;]

with TARGET `db`, `db.getSiblingDB("name")` or `connect("mongodb://...")` and FIELD a field of the
answer (`.ok`, `.isWritablePrimary`, `.setName`: printed as mongosh prints it), one statement per
line, from `--eval CODE` or from .js files. As in mongosh, a command the server refuses (ok: 0)
throws: the error is printed and the exit status is 1. Options: --quiet, --nodb, a connection
string or database name before the files, --host/--port.
"""

import json
import re
import sys

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import PyMongoError

STATEMENT = re.compile(
    r"""^(?P<print>printjson\()?\s*
        (?P<target>db|db\.getSiblingDB\(\s*"(?P<sibling>[^"]+)"\s*\)|connect\(\s*"(?P<uri>[^"]+)"\s*\))
        \.runCommand\((?P<command>\{.*\})\)
        (?:\.(?P<field>[A-Za-z]+))?\s*(?(print)\))\s*;?$""",
    re.VERBOSE,
)


def client(uri):
    return MongoClient(uri, serverSelectionTimeoutMS=3000, directConnection=True)


def execute(line, default_uri, default_db):
    match = STATEMENT.match(line.strip())
    if not match:
        raise SyntaxError(f"mongosh (simulated) does not understand: {line.strip()}")
    command = json.loads(match["command"])
    if match["uri"]:
        conn = client(match["uri"])
        database = conn.get_default_database(default="test")
    else:
        conn = client(default_uri)
        database = conn[match["sibling"] or default_db]
    try:
        result = database.command(command)
    finally:
        conn.close()
    if match["field"] == "ok":
        print(int(result.get("ok", 0)) if float(result.get("ok", 0)).is_integer() else result.get("ok"))
    elif match["field"]:
        # As mongosh prints a value: a string bare, true/false, undefined when absent.
        value = result.get(match["field"])
        if value is None:
            print("undefined")
        elif isinstance(value, bool):
            print("true" if value else "false")
        elif isinstance(value, str):
            print(value)
        else:
            print(json_util.dumps(value))
    else:
        print(json_util.dumps(result, indent=2))


def main(argv):
    code, files, uri, nodb, i = [], [], "mongodb://127.0.0.1:27017/", False, 0
    host, port, database = "127.0.0.1", "27017", "test"
    while i < len(argv):
        a = argv[i]
        if a == "--eval":
            code.append(argv[i + 1])
            i += 1
        elif a in ("--quiet", "--norc"):
            pass
        elif a == "--nodb":
            nodb = True
        elif a == "--host":
            host = argv[i + 1]
            i += 1
        elif a == "--port":
            port = argv[i + 1]
            i += 1
        elif a.startswith("mongodb://"):
            uri = a
        elif a.endswith(".js"):
            files.append(a)
        elif a.startswith("-"):
            print(f"mongosh (simulated): option {a} is not simulated", file=sys.stderr)
            return 1
        else:
            database = a
        i += 1
    if not uri.startswith("mongodb://127.0.0.1:27017/") or host != "127.0.0.1" or port != "27017":
        uri = uri if uri != "mongodb://127.0.0.1:27017/" else f"mongodb://{host}:{port}/"
    for path in files:
        with open(path) as f:
            code.append(f.read())
    lines = [line for text in code for line in text.splitlines() if line.strip() and not line.strip().startswith("//")]
    try:
        for line in lines:
            if nodb and not line.strip().removeprefix("printjson(").startswith("connect("):
                raise SyntaxError("--nodb: only connect(...) statements have a server")
            execute(line, uri, database)
    except (PyMongoError, SyntaxError, ValueError) as error:
        print(f"MongoServerError: {error}" if isinstance(error, PyMongoError) else str(error), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
