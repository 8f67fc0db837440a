package docker

// serveFile does one file operation (data: what a write writes) as the helper, in the container's
// files, under the policy the request carries: the same CheckedFiles the
// agent applies for a local engine, so the same path resolution, the same
// refusals and the same walk without links (no check-then-use race).
func serveFile(req fileReq, data []byte) (fileRes, []byte) {
	x := policy(req.Root, req.Roots, req.Read)
	var res fileRes
	switch req.Op {
	case opRead:
		max := req.Max
		if max <= 0 || max > maxFileData {
			max = maxFileData
		}
		data, err := x.ReadFile(req.Path, max)
		res.Err = toWireErr(err)
		return res, data
	case opWrite:
		res.Err = toWireErr(x.WriteFile(req.Path, data))
	case opRemove:
		res.Err = toWireErr(x.Remove(req.Path))
	case opStat:
		fi, err := x.Stat(req.Path)
		if err != nil {
			res.Err = toWireErr(err)
			return res, nil
		}
		info := toWireInfo(fi)
		res.Info = &info
	case opReadDir:
		ents, err := x.ReadDir(req.Path)
		if err != nil {
			res.Err = toWireErr(err)
			return res, nil
		}
		res.Ents = make([]wireEntry, len(ents))
		for i, e := range ents {
			w := wireEntry{wireInfo: wireInfo{Name: e.Name(), Mode: e.Type()}}
			if fi, err := e.Info(); err == nil {
				w.wireInfo = toWireInfo(fi)
			} else {
				w.Bad = true
			}
			res.Ents[i] = w
		}
	default:
		res.Err = &wireErr{Msg: "unknown file operation " + req.Op}
	}
	return res, nil
}
