"""Same as `onnx-cupy bench` (see `onnx-cupy bench --help`)."""
import sys

from onnx_cupy.tools.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
