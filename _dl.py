import json, os, sys, base64, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
import django; django.setup()
from pathlib import Path
from tests.tools_app.builtin.fs_fixtures import make_dir, grant, ensure_sandbox_user
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.builtin.browser.driving import driver_spec
from common.config.browser import BrowserSection
ensure_sandbox_user()
ws = make_dir("ws")
data = base64.b64encode(b"hello"*10).decode()
mode = sys.argv[1]
(ws/"p.html").write_text(sys.argv[1]); (ws/"hello.txt").write_text("hi"); os.chmod(ws/"hello.txt",0o644); (ws/"linked.txt").symlink_to("/etc/hostname")
os.chmod(ws/"p.html", 0o644); grant(ws)
src = Path("tools_app/builtin/browser/inside/driver.py").read_text()
src = src.replace('"downloads": downloads.settle(pipe) if downloads is not None else [],', '"downloads": downloads.settle(pipe) if downloads is not None else [], "events": [e.get("method") for e in pipe.events],')
import tools_app.builtin.browser.driving as d
src = src.replace('answer({"ok": False, "code": "TIMED_OUT", "message": late})', 'answer({"ok": False, "code": "TIMED_OUT", "message": late, "ev": [(e.get("method"), e.get("params",{}).get("name"), e.get("params",{}).get("state")) for e in pipe.events]})')
d.DRIVER_SOURCE = src
req = {"action":"navigate","url":"file:///workspace/p.html","wait_until":sys.argv[2],"timeout_seconds":8,"viewport":{"width":800,"height":600},"downloads":{"max_count":2,"max_bytes":10**6,"why":"x"}}
spec = driver_spec(BrowserSection(), req, ws, writes=False)
t=time.time(); r = NamespaceSandbox().run(spec); print(time.time()-t)
print(r.stdout[:3000]); print(r.stderr[-2000:])
