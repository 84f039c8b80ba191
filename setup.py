"""The package is described in setup.cfg; this adds its one C module, which is optional:
where it cannot be built (no compiler), the package installs without it and does the
same work in Python (appliance/storage/local/_fast.c says what it does)."""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """An interpreter built with a run path to its own lib folder (pyenv's, which builds
    the wheel on this project's machines) hands it to every module it links; the module
    needs no libpython, and a run path to a build machine's folder is wrong in the .deb
    (lintian: custom-library-search-path). So it is left out."""

    def build_extensions(self):
        linker = self.compiler.linker_so
        self.compiler.linker_so = [arg for arg in linker if not arg.startswith(("-Wl,-rpath", "-Wl,-R"))]
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "appliance.storage.local._fast",
            ["appliance/storage/local/_fast.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration"],
        )
    ],
)
