proc fail {} {error "deliberate failure"}
fail
