# SPDX-License-Identifier: MIT
# tk_idle: a window with a button that does nothing (stock wish and gvwish).
button .b -text idle -command {puts clicked}
pack .b
