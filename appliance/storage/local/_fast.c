/* The stat of a big folder's entries, a batch at a time (tree.py `Tree.entries`).

   lstat_files(dir_fd, names, cls, mask) -> list, one item for each name, in order:
   - a `cls` (the Entry named tuple) (name, "file", size, mtime, atime, mode & mask) for a
     regular file, made as tree.py makes it from os.lstat (the same floats);
   - None when the name cannot be looked at (gone meanwhile, or any other error);
   - the name itself for anything else (a folder, a link...), which the caller looks at
     with os.lstat as before.

   Why: os.lstat made and dropped a stat_result of some twenty objects for every entry,
   which cost more than the system call itself; and the calls of a whole batch are made
   here without the GIL, so the reactor runs meanwhile. A listing of 50,000 entries spent
   ~180 ms in os.lstat and ~120 ms here (bench/README.md). tree.py falls back to os.lstat
   when this module was not built. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

static PyObject *file_kind; /* "file", interned */

static PyObject *stamp(const struct timespec *t) {
    /* CPython's own formula for st_mtime and st_atime (posixmodule.c fill_time) */
    return PyFloat_FromDouble((double)t->tv_sec + (double)t->tv_nsec * 1e-9);
}

static PyObject *file_entry(PyTypeObject *cls, PyObject *name, const struct stat *st, unsigned long mask) {
    PyObject *entry = cls->tp_alloc(cls, 6);
    if (entry == NULL)
        return NULL;
    PyObject *size = PyLong_FromLongLong((long long)st->st_size);
    PyObject *mtime = stamp(&st->st_mtim);
    PyObject *atime = stamp(&st->st_atim);
    PyObject *mode = PyLong_FromUnsignedLong((unsigned long)st->st_mode & mask);
    if (size == NULL || mtime == NULL || atime == NULL || mode == NULL) {
        Py_XDECREF(size);
        Py_XDECREF(mtime);
        Py_XDECREF(atime);
        Py_XDECREF(mode);
        Py_DECREF(entry);
        return NULL;
    }
    Py_INCREF(name);
    Py_INCREF(file_kind);
    PyTuple_SET_ITEM(entry, 0, name);
    PyTuple_SET_ITEM(entry, 1, file_kind);
    PyTuple_SET_ITEM(entry, 2, size);
    PyTuple_SET_ITEM(entry, 3, mtime);
    PyTuple_SET_ITEM(entry, 4, atime);
    PyTuple_SET_ITEM(entry, 5, mode);
    return entry;
}

static PyObject *lstat_files(PyObject *module, PyObject *args) {
    int dir_fd;
    PyObject *names;
    PyTypeObject *cls;
    unsigned long mask;
    if (!PyArg_ParseTuple(args, "iO!O!k", &dir_fd, &PyTuple_Type, &names, &PyType_Type, &cls, &mask))
        return NULL;
    if (!PyType_IsSubtype(cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "lstat_files: cls must be a tuple type");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    size_t slots = count > 0 ? (size_t)count : 1;
    PyObject **encoded = PyMem_Calloc(slots, sizeof(PyObject *));
    const char **paths = PyMem_Calloc(slots, sizeof(char *));
    struct stat *found = PyMem_Calloc(slots, sizeof(struct stat));
    char *failed = PyMem_Calloc(slots, 1);
    PyObject *result = NULL;
    if (encoded == NULL || paths == NULL || found == NULL || failed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "lstat_files: names must be str");
            goto done;
        }
        /* os.fsencode: UTF-8 with surrogateescape, a NUL refused */
        if (!PyUnicode_FSConverter(name, &encoded[i]))
            goto done;
        paths[i] = PyBytes_AS_STRING(encoded[i]);
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++)
        failed[i] = fstatat(dir_fd, paths[i], &found[i], AT_SYMLINK_NOFOLLOW) != 0;
    Py_END_ALLOW_THREADS
    result = PyList_New(count);
    if (result == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i), *item;
        if (failed[i]) {
            item = Py_None;
            Py_INCREF(item);
        } else if (S_ISREG(found[i].st_mode)) {
            item = file_entry(cls, name, &found[i], mask);
            if (item == NULL) {
                Py_CLEAR(result);
                goto done;
            }
        } else {
            item = name;
            Py_INCREF(item);
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    if (encoded != NULL)
        for (Py_ssize_t i = 0; i < count; i++)
            Py_XDECREF(encoded[i]);
    PyMem_Free(encoded);
    PyMem_Free(paths);
    PyMem_Free(found);
    PyMem_Free(failed);
    return result;
}

static PyMethodDef methods[] = {
    {"lstat_files", lstat_files, METH_VARARGS,
     "lstat_files(dir_fd, names, cls, mask): a cls for each regular file, None for a name gone, "
     "the name for anything else (see _fast.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fast(void) {
    file_kind = PyUnicode_InternFromString("file");
    if (file_kind == NULL)
        return NULL;
    return PyModule_Create(&module);
}
