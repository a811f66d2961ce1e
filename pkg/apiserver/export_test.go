package apiserver

import "reflect"

func funcPointer(f any) uintptr { return reflect.ValueOf(f).Pointer() }
