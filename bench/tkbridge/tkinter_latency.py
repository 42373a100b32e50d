# SPDX-License-Identifier: MIT
"""tk_latency baseline: tkinter's `after(0)` -> Python callback start while a
CPU-bound Python thread runs (the GIL's 5 ms switch interval and tkinter's
event loop decide the delay).  With a display it runs tkinter's own
mainloop (variant "tkinter"); without one, tkinter.Tcl() driven by
dooneevent (variant "tkinter-tcl"), since mainloop needs a Tk window.

    python3 tkinter_latency.py N      prints RESULT tk_latency tkinter ...
"""
import sys
import threading
import time
import tkinter

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
try:
    root = tkinter.Tk()
    root.withdraw()
    variant = "tkinter"
except tkinter.TclError:
    root = tkinter.Tcl()
    variant = "tkinter-tcl"
stop = False
done = False


def hog():
    x = 0
    while not stop:
        x += 1


lat = []
state = {"i": 0, "t0": 0}


def cb():
    lat.append(time.perf_counter_ns() - state["t0"])
    root.after(1, step)


def step():
    global done
    if state["i"] >= n:
        done = True
        root.quit()
        return
    state["i"] += 1
    state["t0"] = time.perf_counter_ns()
    root.after(0, cb)


threading.Thread(target=hog, daemon=True).start()
root.after(10, step)
if variant == "tkinter":
    root.mainloop()
else:
    while not done:
        root.tk.dooneevent(0)
stop = True
lat.sort()
if lat:
    p50 = lat[len(lat) // 2] / 1000.0
    p99 = lat[(len(lat) * 99) // 100] / 1000.0
    print("RESULT tk_latency %s p50_us %.3f" % (variant, p50))
    print("RESULT tk_latency %s p99_us %.3f" % (variant, p99))
    print("RESULT tk_latency %s max_us %.3f" % (variant, lat[-1] / 1000.0))
    print("RESULT tk_latency %s samples %d" % (variant, len(lat)))
