"""Every child process of the measuring half: spawned, isolated or forked from a template."""
