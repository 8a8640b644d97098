"""What every operator family uses: execution paths, dtypes, opsets and attributes, arrays,
integer rounding, the kernel loader, the launcher and the emulator."""
