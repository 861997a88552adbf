package s3io

// SplitID lets the external tests build descriptors as the planner does.
var SplitID = splitID
