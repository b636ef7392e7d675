"""The `kiln` command of an installed package (`pip install ./python`): the program lies in the
package's bin/ folder, beside the libraries it loads through its $ORIGIN run path, and this entry
point replaces the Python process with it."""
import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kiln")
    if not os.path.exists(program):
        sys.exit("kiln: this package was built without the command line (KILN_BUILD_APPS=OFF)")
    os.execv(program, [program] + sys.argv[1:])
