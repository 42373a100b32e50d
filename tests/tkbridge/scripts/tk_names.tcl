# SPDX-License-Identifier: MIT
# The application's and the main window's class names, as Tk gave them.
puts "[tk appname] [winfo class .]"
exit
