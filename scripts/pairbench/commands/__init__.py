"""The subcommands of `pairbench` (cli.SUBCOMMANDS), one thin module each: its arguments
(`add_arguments`) and its entry point (`run_<name>`), which turn the command line into
calls of the packages below. A command module is imported only by cli.py, never by another
module (tests/python/test_layout.py enforces it): what two commands share lives in a
package.

May import: every package below (io, contract, runner, analysis, present) and errors.
"""
