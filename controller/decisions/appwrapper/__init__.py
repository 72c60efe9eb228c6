"""The AppWrapper lifecycle and failure policy (DESIGN.md 7.3, 7.4): one pure function per phase."""
