"""The AppWrapper lifecycle and failure policy (docs/appwrapper.md): one pure function per phase."""
