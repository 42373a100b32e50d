# SPDX-License-Identifier: MIT
"""tk_idle baseline: an idle tkinter window (tkinter's own mainloop)."""
import tkinter

root = tkinter.Tk()
tkinter.Button(root, text="idle").pack()
root.mainloop()
