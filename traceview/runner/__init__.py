"""Every child process of the measuring packages: spawn with a timeout, and one outcome."""
