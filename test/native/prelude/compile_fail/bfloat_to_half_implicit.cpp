// expect: conversion from 'bfloat'
#include "mgsim_types.h"
void k(bfloat b) { half h = b; (void)h; }
