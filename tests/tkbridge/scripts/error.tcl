# SPDX-License-Identifier: MIT
proc fail {} {error "deliberate failure"}
fail
