"""Messages of k8s.io/apimachinery (meta/v1, runtime) as field tables.

Each message is written as `"number jsonName type"` entries, read from the public
`generated.proto` files. Types: str, bool, int, bytes (base64 in JSON), qty (Quantity), time
(metav1.Time), microtime, ios (IntOrString), raw (RawExtension: embedded JSON), fieldsv1, strlist
(a message wrapping `repeated string items`), or another message's name; `[T]` is repeated,
`{T}` a map with string keys. A trailing `?` keeps a zero value that was on the wire (Go pointer
fields and JSON fields without omitempty); a name of `-` inlines the message into its parent.
"""

META = {
    "ObjectMeta": """1 name str; 2 generateName str; 3 namespace str; 4 selfLink str; 5 uid str;
        6 resourceVersion str; 7 generation int; 8 creationTimestamp time; 9 deletionTimestamp time;
        10 deletionGracePeriodSeconds int?; 11 labels {str}; 12 annotations {str};
        13 ownerReferences [OwnerReference]; 14 finalizers [str]; 17 managedFields [ManagedFieldsEntry]""",
    "OwnerReference": """5 apiVersion str?; 1 kind str?; 3 name str?; 4 uid str?; 6 controller bool?;
        7 blockOwnerDeletion bool?""",
    "ManagedFieldsEntry": """1 manager str; 2 operation str; 3 apiVersion str; 4 time time; 6 fieldsType str;
        7 fieldsV1 fieldsv1; 8 subresource str""",
    "LabelSelector": "1 matchLabels {str}; 2 matchExpressions [LabelSelectorRequirement]",
    "LabelSelectorRequirement": "1 key str?; 2 operator str?; 3 values [str]",
    "Condition": """1 type str?; 2 status str?; 3 observedGeneration int; 4 lastTransitionTime time;
        5 reason str?; 6 message str?""",
}
