// expect: conversion from 'float' to non-scalar type 'bfloat'
#include "mgsim_types.h"
void k() { bfloat b = 1.0f; (void)b; }
